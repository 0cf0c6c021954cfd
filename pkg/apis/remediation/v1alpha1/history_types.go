package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxRemediationHistory bounds status.remediationHistory (the CRD's maxItems).
const MaxRemediationHistory = 50

// RemediationOutcome is how a remediation of a node ended, or that it has not.
type RemediationOutcome string

const (
	// OutcomeRemediating: the remediation is ongoing.
	OutcomeRemediating RemediationOutcome = "Remediating"
	// OutcomeRecovered: the node is healthy again and its remediation
	// resources are gone.
	OutcomeRecovered RemediationOutcome = "Recovered"
	// OutcomeTimedOut: every remediation step timed out or failed. The
	// resources stay until the node is healthy; finished is set then.
	OutcomeTimedOut RemediationOutcome = "TimedOut"
	// OutcomeNodeDeleted: the Node object was deleted (by its remediator, such
	// as Machine Deletion Remediation, or by someone else) and did not come
	// back under this NodeHealthCheck.
	OutcomeNodeDeleted RemediationOutcome = "NodeDeleted"
	// OutcomeCancelled: the node still exists but this NodeHealthCheck no
	// longer selects it (its selector or the node's labels changed), so its
	// remediation resources were deleted.
	OutcomeCancelled RemediationOutcome = "Cancelled"
)

// TargetKindNode is the targetKind of every remediation record.
const TargetKindNode = "Node"

// RemediationRecord is one remediation of one node, from the unhealthy
// condition to the node healthy again. It follows the remediation history
// proposal's fields.
type RemediationRecord struct {
	// TargetKind is the kind of what was remediated: Node.
	// +kubebuilder:validation:MaxLength=63
	// +required
	TargetKind string `json:"targetKind"`

	// TargetName is the node's name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	TargetName string `json:"targetName"`

	// ConditionType is the type of the unhealthy condition that triggered the
	// remediation, such as Ready. Empty when the controller found the
	// remediation running and the node no longer unhealthy (after an upgrade
	// from a version without history).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=316
	// +optional
	ConditionType corev1.NodeConditionType `json:"conditionType,omitempty"`

	// ConditionStatus is the status of that condition, such as Unknown.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +optional
	ConditionStatus corev1.ConditionStatus `json:"conditionStatus,omitempty"`

	// Detected is when the node became unhealthy: the condition's
	// lastTransitionTime plus the condition's duration. It equals started
	// when the condition is not known.
	// +required
	Detected metav1.Time `json:"detected"`

	// Started is when the first remediation resource was created. The time
	// between detected and started is time spent waiting, for example for
	// minHealthy, storm recovery, a pause or another control-plane node.
	// +required
	Started metav1.Time `json:"started"`

	// Fenced is when the cluster first showed the node fenced: the
	// node.kubernetes.io/out-of-service taint (its timeAdded when set), or the
	// Node object deleted. Absent when neither was seen.
	// +optional
	Fenced *metav1.Time `json:"fenced,omitempty"`

	// Finished is when the node was seen healthy (or gone) again with all its
	// remediation resources deleted. Absent while the remediation is ongoing.
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`

	// Outcome is Remediating while the remediation is ongoing, then how it
	// ended: Recovered, TimedOut (every step timed out or failed), NodeDeleted,
	// or Cancelled (the node is no longer selected).
	// +kubebuilder:validation:Enum=Remediating;Recovered;TimedOut;NodeDeleted;Cancelled
	// +required
	Outcome RemediationOutcome `json:"outcome"`

	// Steps are the remediation resources created for this remediation, in
	// the order they were created: one, or one per escalation step. The 32
	// newest are kept.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Steps []RemediationRecordStep `json:"steps,omitempty"`
}

// RemediationRecordStep is one remediation resource of a remediation record.
type RemediationRecordStep struct {
	// Kind is the remediation resource's kind, such as SelfNodeRemediation.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`

	// Name is the remediation resource's name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// TemplateName is the name of the template it was created from.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	TemplateName string `json:"templateName,omitempty"`

	// Started is when the resource was created.
	// +required
	Started metav1.Time `json:"started"`

	// TimedOut is when the controller gave up on this step: its timeout
	// passed, or its remediator reported Succeeded=False.
	// +optional
	TimedOut *metav1.Time `json:"timedOut,omitempty"`
}
