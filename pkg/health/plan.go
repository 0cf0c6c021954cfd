package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Plan is what the controller should do for one NodeHealthCheck now, and
// what it found. It holds no status: Status builds that from the input, the
// plan and the outcome of carrying the plan out.
type Plan struct {
	// Problem is why the NodeHealthCheck is disabled: a problem of its spec,
	// or Input.RemediationProblem. Nil when it is enabled.
	Problem *Problem

	// Nodes holds one verdict per node of Input.Nodes, in input order: the
	// quiet nodes left out of it have none (all healthy).
	Nodes []NodeVerdict
	// Orphans are the nodes that have remediation resources of this
	// NodeHealthCheck but are not selected (deleted or no longer matching),
	// sorted by name.
	Orphans []string

	// Observed is the number of selected nodes.
	Observed int
	// Healthy is the number of selected nodes that match no unhealthy
	// condition (expired or not) and have no remediation resource.
	Healthy int
	// Remediating is the number of selected nodes with a remediation resource.
	Remediating int
	// OldRemediations is the number of remediation resources older than
	// OldRemediationAge, flagged or about to be.
	OldRemediations int
	// Budget says whether new remediations may start.
	Budget Budget
	// Storm is the storm-recovery state after this evaluation.
	Storm Storm
	// Overlap sums up the selected nodes that other NodeHealthChecks select
	// too; nil when there are none.
	Overlap *Overlap

	// Create lists the remediation resources to create, in node-name order.
	Create []Creation
	// TimeOut lists the remediation resources to give up on. Annotate them
	// before creating the next step, so that a failed write is retried.
	TimeOut []TimeOut
	// Delete lists the remediation resources to delete.
	Delete []Deletion
	// StartHealthyDelay lists resources that need the healthy-delay annotation:
	// their node is healthy and healthyDelay holds them (counting down, or
	// negative and waiting for a confirmation).
	StartHealthyDelay []HealthyDelayMark
	// ClearHealthyDelay lists resources whose healthy-delay annotation must go,
	// because their node relapsed.
	ClearHealthyDelay []corev1.ObjectReference
	// FlagOld lists resources that just became older than 48 hours.
	FlagOld []corev1.ObjectReference
	// RenewLeases lists this NodeHealthCheck's node leases to renew: their
	// nodes still have its resources.
	RenewLeases []LeaseRequest
	// ReleaseLeases lists the nodes whose lease this NodeHealthCheck holds
	// and no longer needs, sorted.
	ReleaseLeases []string
	// RemoveConfirmation lists nodes whose manually-confirmed-healthy
	// annotation must go: they are healthy and their remediation is gone.
	RemoveConfirmation []string

	// Events are transitions worth an event on the NodeHealthCheck.
	Events []Event
	// Warnings are problems the user should fix; they hold as long as the
	// problem does, so the controller emits each once.
	Warnings []Event

	// NextDeadline is the earliest future instant at which the plan can
	// change without any object changing, or zero.
	NextDeadline time.Time
	// CreatesFrom is the earliest instant from which a remediation may be
	// created: now when a node waits for its first or next step, else when
	// an unhealthy condition reaches its duration or a step its timeout;
	// zero when none may be without an object changing.
	CreatesFrom time.Time
	// createsNow are the nodes from which a remediation may be created now,
	// and createsLater the earliest later instant, for CreatesFromAfter.
	createsNow   map[string]bool
	createsLater time.Time
	// Deferred is the number of resources Input.MaxCreations held for the
	// next plan, which should follow at once.
	Deferred int
	// ControlPlaneUnknown is Input.ControlPlaneUnknown when a node waits for
	// it (WaitControlPlaneUnknown).
	ControlPlaneUnknown string

	// rules is the spec as Evaluate parsed it, for Status.
	rules *rules
	// decidedFrom is the NodeHealthCheck the plan was made from, for Recheck.
	decidedFrom *v1alpha1.NodeHealthCheck
}

// NodeState is a node's health as the NodeHealthCheck sees it.
type NodeState string

const (
	// StateHealthy: no unhealthy condition matches and no remediation exists.
	StateHealthy NodeState = "Healthy"
	// StateSoonUnhealthy: an unhealthy condition matches but its duration has
	// not passed yet, and none has expired.
	StateSoonUnhealthy NodeState = "SoonUnhealthy"
	// StateUnhealthy: an unhealthy condition has matched for its duration.
	StateUnhealthy NodeState = "Unhealthy"
	// StateRecovering: no unhealthy condition matches, but a remediation
	// resource still exists (waiting for healthyDelay or for its deletion).
	StateRecovering NodeState = "Recovering"
)

// WaitReason is why a node that needs a new remediation does not get one now.
type WaitReason string

const (
	WaitNone         WaitReason = ""
	WaitDisabled     WaitReason = "Disabled"
	WaitPaused       WaitReason = "Paused"
	WaitExcluded     WaitReason = "ExcludedFromRemediation"
	WaitMinHealthy   WaitReason = "MinHealthy"
	WaitStorm        WaitReason = "StormRecovery"
	WaitControlPlane WaitReason = "ControlPlaneRemediationOngoing"
	// WaitControlPlaneUnknown: the control-plane nodes under remediation are
	// not all known yet (Input.ControlPlaneUnknown).
	WaitControlPlaneUnknown WaitReason = "ControlPlaneRemediationsUnknown"
	WaitDeletion            WaitReason = "RemediationDeletionPending"
	WaitNoTemplate          WaitReason = "NoTemplateLeft"
	// WaitOwnWrite: the caches do not show this controller's last write for
	// the node yet.
	WaitOwnWrite WaitReason = "OwnWritePending"
	// WaitLeaseHeld: someone else, such as node-maintenance-operator, holds
	// the node's lease.
	WaitLeaseHeld WaitReason = "NodeLeaseHeld"
	// WaitNextBatch: this plan created as many resources as it may; the
	// next plan, right after, goes on.
	WaitNextBatch WaitReason = "NextBatch"
	// WaitStatusWrite: the resources this controller created are not on
	// the stored status yet, which shows none, and the remediation guard
	// reads that status (Input.CreatesHeld).
	WaitStatusWrite WaitReason = "StatusWritePending"
	// WaitOverlap: another NodeHealthCheck that claims the node remediates
	// it (Remediator).
	WaitOverlap WaitReason = "RemediatedByOtherNodeHealthCheck"
	// WaitStatusFull: the status remembers as many incidents as it can
	// hold (remembers); a new one starts when one ends.
	WaitStatusFull WaitReason = "StatusFull"
	// WaitCreateFailed: the node's last create failed or was refused; it is
	// retried after a back-off (Input.CreateRetries), the others first.
	WaitCreateFailed WaitReason = "CreateFailed"
)

// NodeVerdict is the evaluation of one selected node.
type NodeVerdict struct {
	Node  *nodeview.Node
	State NodeState
	// Condition is the unhealthy condition that matches: the expired one for
	// StateUnhealthy, the one that expires first for StateSoonUnhealthy.
	Condition *v1alpha1.UnhealthyCondition
	// Since is the matching node condition's lastTransitionTime.
	Since time.Time
	// Expires is when Condition's duration passes.
	Expires time.Time
	// ControlPlane and Excluded are set for a node that is not healthy:
	// whether it has a control-plane role label, and whether its
	// exclude-from-remediation label is "true".
	ControlPlane bool
	Excluded     bool
	// Remediations is the number of this NodeHealthCheck's resources for the node.
	Remediations int
	// Waiting is why the node does not get a remediation it needs.
	Waiting WaitReason
	// Lease is the lease someone else holds on the node, with WaitLeaseHeld.
	Lease *NodeLease
	// RemediatedBy is the other NodeHealthCheck that remediates the node
	// instead of this one, or nil.
	RemediatedBy *Claim

	// Listed is true when the node has a status entry: it is unhealthy, under
	// remediation, or soon unhealthy again during an incident on record.
	Listed bool
	// HealthySince is when a recovering node was first seen healthy: the
	// start of its healthy delay.
	HealthySince time.Time
	// HealthyDelayed is true while a recovering node's resources wait for
	// healthyDelay or, with a negative one, for a manual confirmation.
	HealthyDelayed bool
	// Superseded are resources of earlier steps that neither an annotation
	// nor the last status shows as timed out (a lost status write of a
	// Succeeded=True step), with when the later running step that superseded
	// them started.
	Superseded map[types.UID]time.Time
	// incident is the node's incident; nil for a healthy node.
	incident *incident
}

// Budget is the minHealthy/maxUnhealthy gate for new remediations.
type Budget struct {
	// MinHealthy is how many selected nodes must be healthy.
	MinHealthy int
	// Allowed is true when Healthy >= MinHealthy (and the spec is usable).
	Allowed bool
}

// Storm is the storm-recovery state.
type Storm struct {
	// Configured is true when stormRecoveryThreshold or stormCooldownDuration is set.
	Configured bool
	// Active is true while storm recovery holds back new remediations.
	Active bool
	// Since is when the storm started.
	Since time.Time
	// Starting is true when this plan starts the storm; it starts only if
	// enough of the plan's creates succeed (Plan.StormAfter).
	Starting bool
	// CooldownStarted is when a running cooldown started, or zero.
	CooldownStarted time.Time
	// CooldownEnds is when a running cooldown ends, or zero.
	CooldownEnds time.Time
}

// Sooner is the sooner of two waits, where zero is none: how a plan's next
// check, a read's refresh and a retry make one requeue.
func Sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// CreatesFromAfter is CreatesFrom once the plan's acts are carried out:
// when every node from which a remediation could be created now got it,
// the next may be created no sooner than the earliest later instant, a
// created step's timeout, or an object's change. A node that waits, was
// held back, withdrawn or failed keeps it now.
func (p *Plan) CreatesFromAfter(out *Outcome) time.Time {
	if len(p.createsNow) == 0 || len(out.Created) < len(p.createsNow) {
		return p.CreatesFrom
	}
	created := make(map[string]bool, len(out.Created))
	later := p.createsLater
	for i := range out.Created {
		c := &out.Created[i]
		created[c.Node] = true
		if c.Timeout > 0 {
			if c.CreationTime.IsZero() {
				return p.CreatesFrom
			}
			if timeout := c.CreationTime.Add(c.Timeout); later.IsZero() || timeout.Before(later) {
				later = timeout
			}
		}
	}
	for node := range p.createsNow {
		if !created[node] {
			return p.CreatesFrom
		}
	}
	return later
}
