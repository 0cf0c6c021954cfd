package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Input is everything Evaluate looks at.
type Input struct {
	// NHC is the NodeHealthCheck with its current status. Evaluate never
	// modifies it.
	NHC *v1alpha1.NodeHealthCheck
	// Nodes are the nodes the selector matches, in any order, but those
	// the caller left out as quiet (quiet.go: Quietness, NamedNodes).
	Nodes []*nodeview.Node
	// QuietNodes counts the selected nodes left out of Nodes as quiet:
	// healthy, and nothing to do for them.
	QuietNodes int
	// Remediations are this NodeHealthCheck's remediation resources, keyed by
	// the name of the node they remediate. Resources of nodes that are not in
	// Nodes (deleted or no longer selected) are orphans.
	Remediations map[string][]Remediation
	// BusyControlPlaneNodes are the control-plane nodes under remediation:
	// with a remediation resource of any owner and of any kind that any
	// NodeHealthCheck uses, or a create of one under way. Only one
	// control-plane node is remediated at a time.
	BusyControlPlaneNodes map[string]bool
	// ControlPlaneUnknown, when set, is why BusyControlPlaneNodes may be
	// incomplete (after a start, the kinds of another NodeHealthCheck are not
	// read yet): no control-plane node gets a new resource meanwhile, first
	// or next step, and another NodeHealthCheck that selects a node may be
	// remediating it (the caller marks its claims Unknown).
	ControlPlaneUnknown string
	// Claims are, by selected node, the other NodeHealthChecks that select
	// it too or have remediation resources for it. Remediator says which one
	// remediates it.
	Claims map[string][]Claim
	// PendingNodes are nodes with a write of this controller (a create or a
	// delete) that Remediations do not show yet. Their resources are not
	// known: they get no new action, and their status entries stay as they
	// were, until the write shows.
	PendingNodes map[string]bool
	// DeletedNodes are nodes that have remediation resources of this
	// NodeHealthCheck, or an ongoing remediation in its history, and whose
	// Node object no longer exists. The history records them as fenced and
	// their remediations as ended by the node's deletion; the other
	// unselected nodes are no longer selected.
	DeletedNodes map[string]bool
	// Unreadable, when set, is why the stored NodeHealthCheck cannot be read
	// at all: it disables the NodeHealthCheck before its spec is looked at.
	// Set ResourcesUnknown with it.
	Unreadable *Problem
	// RemediationProblem, when set, is why the templates cannot be used: a kind
	// that is not served, a template that is missing or invalid. Like a
	// problem of the spec, it disables the NodeHealthCheck: no remediation is
	// created or escalated, while healthy nodes and orphans are still cleaned up.
	RemediationProblem *Problem
	// ResourcesUnknown is true when the remediation resources cannot be read
	// at all, for example because their informers may not list them, and
	// RemediationProblem says why. Deciding without them could lose
	// remediations: the plan does nothing, and the status keeps its entries.
	ResourcesUnknown bool
	// Leases are the node leases, shared with other operators; nil when the
	// controller does not use them. A node whose lease someone else holds
	// gets no new resource.
	Leases *Leases
	// MaxCreations bounds the resources one plan creates, so that no create
	// is sent long after the snapshot it was decided from; 0 is no bound. The
	// rest wait for the next plan, and storm recovery does not start before
	// they had their turn.
	MaxCreations int
	// CreatesHeld holds every new resource for a later plan: resources the
	// caller created are not on the stored status yet, which shows none, and
	// the remediation guard reads that status (WaitStatusWrite).
	CreatesHeld bool
	// CreateRetries are the nodes whose last create failed or was refused,
	// with when they may get one again: until then they wait
	// (WaitCreateFailed), and the others go first. Under the remediation
	// guard a plan creates one resource, for the node unhealthy longest;
	// were its create always refused (by a webhook, or someone else's
	// resource in the way), no other node would get one.
	CreateRetries map[string]time.Time
	// StatusBytes bounds the estimated bytes of status.unhealthyNodes
	// listed in full; the incidents' memory may take twice as much once
	// compacted (bound). 0 is DefaultStatusBytes, what etcd's default
	// object limit holds beside the rest of a NodeHealthCheck.
	StatusBytes int
	// Selector is the NodeHealthCheck's spec.selector as the caller parsed
	// it once for its node listing; the re-check of each create matches
	// with it. Nil: Evaluate parses the spec's, and reports it if invalid.
	Selector labels.Selector
	// Now is the current time.
	Now time.Time
}

// Problem is why a NodeHealthCheck cannot work, for its Disabled condition.
type Problem struct {
	// Reason is a CamelCase reason such as RemediationTemplateNotFound.
	Reason string
	// Message tells the user what is wrong and what to fix.
	Message string
}

// Remediation summarizes one remediation resource of this NodeHealthCheck.
type Remediation struct {
	// Ref identifies the resource: apiVersion, kind, namespace, name and uid.
	Ref corev1.ObjectReference
	// TemplateName is the resource's template-name annotation; empty for
	// resources of older controllers, which are matched by kind.
	TemplateName string
	// Created is the resource's creationTimestamp.
	Created time.Time
	// Deleting is true when the resource has a deletionTimestamp: a finalizer
	// of its remediator keeps it, and the node is still under remediation.
	Deleting bool
	// Succeeded is the status of the resource's Succeeded condition, or empty.
	Succeeded metav1.ConditionStatus
	// PermanentNodeDeletionExpected is true when the resource's
	// PermanentNodeDeletionExpected condition is True.
	PermanentNodeDeletionExpected bool
	// TimedOut is the time of the resource's nhc-timed-out annotation, or zero.
	TimedOut time.Time
	// HealthyDelayStart is the time of the resource's healthy-delay annotation, or zero.
	HealthyDelayStart time.Time
	// FlaggedOld is true when the resource carries the old-remediation annotation.
	FlaggedOld bool
	// ControlPlane is true when the resource carries the control-plane label.
	ControlPlane bool
}
