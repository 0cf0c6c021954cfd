package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Decision is what the controller should do for one NodeHealthCheck now.
type Decision struct {
	// Nodes holds one verdict per selected node, in input order.
	Nodes []NodeVerdict

	// Observed is the number of selected nodes.
	Observed int
	// Healthy is the number of selected nodes that match no unhealthy
	// condition (expired or not) and have no remediation resource.
	Healthy int
	// Remediating is the number of selected nodes with a remediation resource.
	Remediating int
	// Budget says whether new remediations may start.
	Budget Budget
	// Storm is the storm-recovery state after this evaluation.
	Storm Storm

	// Create lists the remediation resources to create, in node-name order.
	Create []Creation
	// TimeOut lists the remediation resources to give up on. Annotate them
	// before creating the next step, so that a failed write is retried.
	TimeOut []TimeOut
	// Delete lists the remediation resources to delete.
	Delete []Deletion
	// StartHealthyDelay lists resources that need the healthy-delay annotation:
	// their node is healthy and a positive healthyDelay counts down.
	StartHealthyDelay []HealthyDelayMark
	// ClearHealthyDelay lists resources whose healthy-delay annotation must go,
	// because their node relapsed.
	ClearHealthyDelay []corev1.ObjectReference
	// FlagOld lists resources that just became older than 48 hours.
	FlagOld []corev1.ObjectReference
	// RemoveConfirmation lists nodes whose manually-confirmed-healthy
	// annotation must go: they are healthy and their remediation is gone.
	RemoveConfirmation []string

	// Events are transitions worth an event on the NodeHealthCheck.
	Events []Event
	// Warnings are problems the user should fix; they hold as long as the
	// problem does, so the controller emits each once.
	Warnings []Event

	// Status is the new status. It does not contain the resources of Create
	// yet: call RecordCreated for each one that was created.
	Status v1alpha1.NodeHealthCheckStatus
	// NextDeadline is the earliest future instant at which the decision can
	// change without any object changing, or zero.
	NextDeadline time.Time

	// waitSummary explains, for the status reason, why unhealthy nodes wait.
	waitSummary string
	spec        *v1alpha1.NodeHealthCheckSpec
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
	WaitDeletion     WaitReason = "RemediationDeletionPending"
	WaitNoTemplate   WaitReason = "NoTemplateLeft"
)

// NodeVerdict is the evaluation of one selected node.
type NodeVerdict struct {
	Node  *corev1.Node
	State NodeState
	// Condition is the unhealthy condition that matches: the expired one for
	// StateUnhealthy, the one that expires first for StateSoonUnhealthy.
	Condition *v1alpha1.UnhealthyCondition
	// Since is the matching node condition's lastTransitionTime.
	Since time.Time
	// Expires is when Condition's duration passes.
	Expires      time.Time
	ControlPlane bool
	// Excluded is true when the exclude-from-remediation label is "true".
	Excluded bool
	// Remediations is the number of this NodeHealthCheck's resources for the node.
	Remediations int
	// Waiting is why the node does not get a remediation it needs.
	Waiting WaitReason
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
	// CooldownEnds is when a running cooldown ends, or zero.
	CooldownEnds time.Time
}

// Creation is a remediation resource to create.
type Creation struct {
	Node string
	// Template is the template to create it from.
	Template corev1.ObjectReference
	// Step is the template's index in the escalation, sorted by order; 0 for
	// remediationTemplate.
	Step int
	// Timeout is the step's escalation timeout; 0 for remediationTemplate.
	Timeout time.Duration
	// ControlPlane marks the remediation of a control-plane node.
	ControlPlane bool
	// Escalation is true when a previous step timed out or failed.
	Escalation bool
	// firstResource is true when the node has no resource yet.
	firstResource bool
}

// TimeOut is a remediation resource to give up on.
type TimeOut struct {
	Node     string
	Resource corev1.ObjectReference
	// Annotate is false when the resource reports Succeeded=True: such a
	// resource never gets the timed-out annotation.
	Annotate bool
	// Failed is true when the remediator reported Succeeded=False, rather than
	// the step's timeout passing.
	Failed bool
}

// DeletionReason is why a remediation resource is deleted.
type DeletionReason string

const (
	// DeleteNodeHealthy: the node is healthy (and any healthyDelay has passed).
	DeleteNodeHealthy DeletionReason = "NodeHealthy"
	// DeleteManuallyConfirmed: the node is healthy and annotated as manually confirmed.
	DeleteManuallyConfirmed DeletionReason = "ManuallyConfirmedHealthy"
	// DeleteNodeGone: the node was deleted or is no longer selected.
	DeleteNodeGone DeletionReason = "NodeGone"
)

// Deletion is a remediation resource to delete.
type Deletion struct {
	Node     string
	Resource corev1.ObjectReference
	Reason   DeletionReason
}

// HealthyDelayMark is a healthy-delay annotation to write.
type HealthyDelayMark struct {
	Resource corev1.ObjectReference
	// Start is when the node was first seen healthy.
	Start time.Time
}

// Event is an event to record on the NodeHealthCheck.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type    string
	Reason  string
	Message string
	// Node is the node the event is about, if any.
	Node string
}
