package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// What a plan asks the controller to do with remediation resources; the
// Outcome says which of it was done.

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
	// Lease is the node lease to take before the resource is created; nil
	// without leases.
	Lease *LeaseRequest
	// FirstResource is true when the node has no resource of this
	// NodeHealthCheck yet: the create is checked against the others'.
	FirstResource bool
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
	// LeaseOverdue is true when the node's lease became overdue before the
	// step's timeout passed.
	LeaseOverdue bool
	// At is when the controller gives up: the annotation's value.
	At time.Time
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
