package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodeHealthCheck watches the nodes its selector matches. When a node holds one
// of the unhealthy conditions for longer than that condition's duration, the
// controller creates a remediation resource from a remediation template, and
// deletes it again when the node is healthy.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodehealthchecks,scope=Cluster,shortName=nhc,singular=nodehealthcheck
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Disabled, Paused, Remediating or Enabled"
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedNodes`,description="Nodes selected by the selector"
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.healthyNodes`,description="Selected nodes that are healthy"
// +kubebuilder:printcolumn:name="Remediating",type=integer,JSONPath=`.status.remediatingNodes`,description="Nodes with an ongoing remediation"
// +kubebuilder:printcolumn:name="Storm",type=boolean,JSONPath=`.status.stormRecoveryActive`,priority=1,description="Storm recovery holds back new remediations"
// +kubebuilder:printcolumn:name="Overlap",type=string,JSONPath=`.status.conditions[?(@.type=="NodesOverlap")].status`,priority=1,description="True when other NodeHealthChecks select some of the same nodes"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1,description="Why the NodeHealthCheck is in its phase"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeHealthCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which nodes to watch, when a node is unhealthy, and how to remediate it.
	// +required
	Spec NodeHealthCheckSpec `json:"spec"`

	// Status is what the controller observed and did, written by the controller only.
	// +optional
	Status NodeHealthCheckStatus `json:"status,omitempty"`
}

// NodeHealthCheckSpec says which nodes to watch, when a node counts as
// unhealthy, how many may be remediated at once, and with which remediator.
//
// +kubebuilder:validation:XValidation:rule="has(self.remediationTemplate) || (has(self.escalatingRemediations) && size(self.escalatingRemediations) > 0)",message="set either remediationTemplate or at least one escalatingRemediations entry"
// +kubebuilder:validation:XValidation:rule="!(has(self.remediationTemplate) && has(self.escalatingRemediations) && size(self.escalatingRemediations) > 0)",message="remediationTemplate and escalatingRemediations are mutually exclusive: set only one of them"
// +kubebuilder:validation:XValidation:rule="has(self.minHealthy) || has(self.maxUnhealthy)",message="set one of minHealthy or maxUnhealthy"
// +kubebuilder:validation:XValidation:rule="!(has(self.minHealthy) && has(self.maxUnhealthy))",message="minHealthy and maxUnhealthy are mutually exclusive: set only one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnhealthy) || !((has(self.remediationTemplate) && self.remediationTemplate.kind == 'MachineDeletionRemediationTemplate') || (has(self.escalatingRemediations) && self.escalatingRemediations.exists(e, e.remediationTemplate.kind == 'MachineDeletionRemediationTemplate')))",message="maxUnhealthy cannot be used with a MachineDeletionRemediationTemplate, because deleted nodes no longer count as unhealthy: use minHealthy instead"
type NodeHealthCheckSpec struct {
	// Selector selects the nodes this NodeHealthCheck watches. It must have at
	// least one matchLabels or matchExpressions entry: an empty selector would
	// select every node, control-plane nodes included. A common selector for
	// worker nodes is: node-role.kubernetes.io/control-plane DoesNotExist and
	// node-role.kubernetes.io/master DoesNotExist. Do not let two
	// NodeHealthChecks select the same node, and do not mix control-plane and
	// worker nodes in one NodeHealthCheck.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must have at least one matchLabels or matchExpressions entry: an empty selector would select every node"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="selector matchExpressions operator must be one of In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="selector matchExpressions with operator In or NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="selector matchExpressions with operator Exists or DoesNotExist must not have values"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || size(self.matchLabels) <= 64",message="selector matchLabels may have at most 64 entries"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || size(self.matchExpressions) <= 64",message="selector matchExpressions may have at most 64 entries"
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// UnhealthyConditions lists the node conditions that make a node unhealthy.
	// A node is unhealthy when it has a condition of one entry's type with that
	// entry's status for longer than the entry's duration. The entries are
	// OR-ed. Any condition type can be used, including those of
	// node-problem-detector. Defaults to Ready=False and Ready=Unknown, each for
	// 300s. Remove the field to get the defaults back.
	// +kubebuilder:default={{type:Ready,status:"False",duration:"300s"},{type:Ready,status:Unknown,duration:"300s"}}
	// +kubebuilder:validation:XValidation:rule="size(self) > 0",message="unhealthyConditions must have at least one entry; remove the field to use the defaults (Ready False or Unknown for 300s)"
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=type
	// +listMapKey=status
	// +optional
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`

	// MinHealthy is the minimum number of healthy selected nodes needed to
	// start new remediations: an absolute number such as 3, or a percentage of
	// the selected nodes such as "51%" (rounded up). Remediations already
	// running continue when the count drops below it. Mutually exclusive with
	// maxUnhealthy; one of the two must be set.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^((100|[0-9]{1,2})%|[0-9]{1,7})$') && (self.endsWith('%') || int(self) <= 1000000) : self >= 0 && self <= 1000000",message="minHealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%, such as 3 or \"51%\""
	// +optional
	MinHealthy *intstr.IntOrString `json:"minHealthy,omitempty"`

	// MaxUnhealthy is the maximum number of unhealthy selected nodes that still
	// allows new remediations: an absolute number such as 2, or a percentage of
	// the selected nodes such as "49%" (rounded up). A number above the number of
	// selected nodes means no limit. Mutually exclusive with minHealthy; one of
	// the two must be set. Do not use it with remediators that delete nodes,
	// such as Machine Deletion Remediation: deleted nodes are no longer counted.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? self.matches('^((100|[0-9]{1,2})%|[0-9]{1,7})$') && (self.endsWith('%') || int(self) <= 1000000) : self >= 0 && self <= 1000000",message="maxUnhealthy must be an integer from 0 to 1000000, or a percentage from 0% to 100%, such as 2 or \"49%\""
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// StormCooldownDuration is the upstream operator's storm setting, honoured
	// for compatibility: after a storm's end condition holds, new remediations
	// wait this long more. A storm starts when the minHealthy or maxUnhealthy
	// limit is reached. It is a Go duration such as 30s or 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$')",message="stormCooldownDuration must be a duration of 0 or more such as 30s, 5m or 1h30m, with at most 5 digits in each number"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$') || duration(self) <= duration('8760h')",message="stormCooldownDuration must be at most 8760h (a year)"
	// +optional
	StormCooldownDuration *metav1.Duration `json:"stormCooldownDuration,omitempty"`

	// StormRecoveryThreshold turns on storm recovery. When the nodes under
	// remediation reach the most that minHealthy or maxUnhealthy allows at
	// once, storm recovery starts and holds back every new remediation, even
	// when the limit would allow one again, until the number of unhealthy
	// nodes is at or below this threshold. Choose it below the number of
	// selected nodes minus minHealthy.
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 1000000",message="stormRecoveryThreshold must be from 0 to 1000000: it is the number of unhealthy nodes at or below which storm recovery ends"
	// +optional
	StormRecoveryThreshold *int32 `json:"stormRecoveryThreshold,omitempty"`

	// RemediationTemplate references the remediation template of a remediator,
	// for example a SelfNodeRemediationTemplate. For an unhealthy node the
	// controller creates a resource of the template's kind without its
	// "Template" suffix, in the template's namespace, with the template's
	// spec.template.spec as its spec. apiVersion, kind and name are required;
	// namespace is required for namespaced templates. Mutually exclusive with
	// escalatingRemediations.
	// +kubebuilder:validation:XValidation:rule="has(self.apiVersion) && size(self.apiVersion) > 0",message="remediationTemplate.apiVersion is required"
	// +kubebuilder:validation:XValidation:rule="has(self.kind) && self.kind.endsWith('Template') && size(self.kind) > 8",message="remediationTemplate.kind must be set and end with Template, such as SelfNodeRemediationTemplate"
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) > 0",message="remediationTemplate.name is required"
	// +kubebuilder:validation:XValidation:rule="size(self.apiVersion) <= 317 && size(self.kind) <= 63 && size(self.name) <= 253 && (!has(self.namespace) || size(self.namespace) <= 63) && (!has(self.uid) || size(self.uid) <= 128) && (!has(self.resourceVersion) || size(self.resourceVersion) <= 128) && (!has(self.fieldPath) || size(self.fieldPath) <= 256)",message="remediationTemplate fields are too long: apiVersion at most 317 characters, kind 63, name 253, namespace 63"
	// +optional
	RemediationTemplate *corev1.ObjectReference `json:"remediationTemplate,omitempty"`

	// EscalatingRemediations lists remediation templates to try one after the
	// other, in ascending order. When a remediation times out, or its
	// remediator reports the condition Succeeded=False, the controller
	// annotates it with remediation.medik8s.io/nhc-timed-out and creates the
	// next one. Mutually exclusive with remediationTemplate.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.order == a.order))",message="escalatingRemediations order values must be unique"
	// +optional
	EscalatingRemediations []EscalatingRemediation `json:"escalatingRemediations,omitempty"`

	// PauseRequests pauses this NodeHealthCheck while it has at least one
	// entry: no new remediation starts, remediations already running continue,
	// and healthy nodes are still cleaned up. Use descriptive entries, such as
	// "cluster upgrade by @admin".
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	PauseRequests []string `json:"pauseRequests,omitempty"`

	// HealthyDelay is how long a node must stay healthy before its remediation
	// is deleted. 0 or unset deletes it as soon as the node is healthy. A
	// negative value, such as -1s, never deletes it automatically: annotate the
	// node with remediation.medik8s.io/manually-confirmed-healthy, or set this
	// field to 0, to release it. The annotation also skips a positive delay for
	// that node. A Go duration such as 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^-?(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$')",message="healthyDelay must be a duration such as 0s, 5m or -1s (negative: never delete the remediation automatically), with at most 5 digits in each number"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^-?(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$') || (duration(self) <= duration('8760h') && duration(self) >= duration('-8760h'))",message="healthyDelay must be from -8760h to 8760h (a year)"
	// +optional
	HealthyDelay *metav1.Duration `json:"healthyDelay,omitempty"`
}

// UnhealthyCondition is a node condition that makes a node unhealthy when the
// node holds it for longer than Duration.
type UnhealthyCondition struct {
	// Type is the node condition type, such as Ready, or any type another
	// agent sets, such as node-problem-detector's KernelDeadlock.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Type corev1.NodeConditionType `json:"type"`

	// Status is the condition status that counts as unhealthy: "True", "False"
	// or "Unknown" (quoted in YAML).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Status corev1.ConditionStatus `json:"status"`

	// Duration is how long the node must hold the condition, counted from the
	// condition's lastTransitionTime, before the node is unhealthy. A Go
	// duration such as 300s or 5m. Too short a duration remediates (often:
	// reboots) nodes that only had a short hiccup or that start slowly.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$')",message="duration must be a duration of 0 or more such as 300s, 5m or 1h30m, with at most 5 digits in each number"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0|([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4})$') || duration(self) <= duration('8760h')",message="duration must be at most 8760h (a year)"
	// +required
	Duration metav1.Duration `json:"duration"`
}

// EscalatingRemediation is one step of an escalation: a remediation template,
// its place in the order, and how long it may run before the next step starts.
type EscalatingRemediation struct {
	// RemediationTemplate references the remediation template of this step.
	// apiVersion, kind and name are required; namespace is required for
	// namespaced templates.
	// +kubebuilder:validation:XValidation:rule="has(self.apiVersion) && size(self.apiVersion) > 0",message="remediationTemplate.apiVersion is required"
	// +kubebuilder:validation:XValidation:rule="has(self.kind) && self.kind.endsWith('Template') && size(self.kind) > 8",message="remediationTemplate.kind must be set and end with Template, such as SelfNodeRemediationTemplate"
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) > 0",message="remediationTemplate.name is required"
	// +kubebuilder:validation:XValidation:rule="size(self.apiVersion) <= 317 && size(self.kind) <= 63 && size(self.name) <= 253 && (!has(self.namespace) || size(self.namespace) <= 63) && (!has(self.uid) || size(self.uid) <= 128) && (!has(self.resourceVersion) || size(self.resourceVersion) <= 128) && (!has(self.fieldPath) || size(self.fieldPath) <= 256)",message="remediationTemplate fields are too long: apiVersion at most 317 characters, kind 63, name 253, namespace 63"
	// +required
	RemediationTemplate corev1.ObjectReference `json:"remediationTemplate"`

	// Order is this step's place in the escalation: lower orders run first.
	// Each order must be unique, from -1000000 to 1000000.
	// +kubebuilder:validation:Minimum=-1000000
	// +kubebuilder:validation:Maximum=1000000
	// +required
	Order int `json:"order"`

	// Timeout is how long this step may run before the next one starts, at
	// least 60s. A Go duration such as 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$')",message="timeout must be a duration such as 300s, 5m or 1h30m, with at most 5 digits in each number"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$') || duration(self) >= duration('60s')",message="timeout must be at least 60s"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|µs|ms|s|m|h)){1,4}$') || duration(self) <= duration('8760h')",message="timeout must be at most 8760h (a year)"
	// +required
	Timeout metav1.Duration `json:"timeout"`
}

// NodeHealthCheckPhase is a short summary of what a NodeHealthCheck is doing.
type NodeHealthCheckPhase string

const (
	// PhaseDisabled means the NodeHealthCheck cannot work, for example because
	// its template is missing; the Disabled condition says why.
	PhaseDisabled NodeHealthCheckPhase = "Disabled"
	// PhasePaused means the spec has pause requests: no new remediation starts.
	PhasePaused NodeHealthCheckPhase = "Paused"
	// PhaseRemediating means at least one node has a remediation.
	PhaseRemediating NodeHealthCheckPhase = "Remediating"
	// PhaseEnabled means the NodeHealthCheck watches its nodes and no node has a remediation.
	PhaseEnabled NodeHealthCheckPhase = "Enabled"
)

// NodeHealthCheckStatus is what the controller observed and did.
type NodeHealthCheckStatus struct {
	// ObservedNodes is the number of nodes the selector matches.
	// +optional
	ObservedNodes *int32 `json:"observedNodes,omitempty"`

	// HealthyNodes is the number of selected nodes that match no unhealthy
	// condition, not even one whose duration has not passed yet, and have no
	// remediation of this NodeHealthCheck.
	// +optional
	HealthyNodes *int32 `json:"healthyNodes,omitempty"`

	// RemediatingNodes is the number of selected nodes with at least one
	// remediation of this NodeHealthCheck.
	// +optional
	RemediatingNodes *int32 `json:"remediatingNodes,omitempty"`

	// UnhealthyNodes lists the nodes that are unhealthy or still have a
	// remediation, with their remediations. A node leaves the list when it is
	// healthy and its remediations are gone.
	// At most 5000 are listed, nodes under remediation first, so that the
	// status stays writable in a mass failure; the counters count them all.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=5000
	// +optional
	UnhealthyNodes []*UnhealthyNode `json:"unhealthyNodes,omitempty"`

	// InFlightRemediations is deprecated: use unhealthyNodes. It maps node names
	// to the start of their remediation, and is kept only for compatibility.
	// +kubebuilder:validation:MaxProperties=5000
	// +optional
	InFlightRemediations map[string]metav1.Time `json:"inFlightRemediations,omitempty"`

	// Conditions are the NodeHealthCheck's conditions. Disabled=True means it
	// cannot work (for example its template is missing or invalid), and its
	// reason and message say why. NodesOverlap=True means other
	// NodeHealthChecks select some of its nodes too; its message names them
	// and says which one remediates how many of the shared nodes.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase is a short summary: Disabled, Paused, Remediating or Enabled.
	// +optional
	Phase NodeHealthCheckPhase `json:"phase,omitempty"`

	// Reason explains the phase in a sentence.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`

	// LastUpdateTime is when the controller last changed this status.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`

	// ObservedGeneration is the spec generation this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// StormRecoveryActive tells whether storm recovery holds back new
	// remediations. Present only when stormRecoveryThreshold is set.
	// +optional
	StormRecoveryActive *bool `json:"stormRecoveryActive,omitempty"`

	// StormRecoveryStartTime is when storm recovery started. Present only while
	// stormRecoveryActive is true.
	// +optional
	StormRecoveryStartTime *metav1.Time `json:"stormRecoveryStartTime,omitempty"`

	// RemediationHistory lists this NodeHealthCheck's most recent
	// remediations, newest (by started) first: the ongoing ones, with outcome
	// Remediating, and the ended ones, with how they ended. At most 50 are
	// kept; older ones are dropped. The history goes with the
	// NodeHealthCheck when it is deleted.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	RemediationHistory []RemediationRecord `json:"remediationHistory,omitempty"`
}

// UnhealthyNode is a node that is unhealthy or still has a remediation.
type UnhealthyNode struct {
	// Name is the node's name.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Remediations are this node's remediation resources, in the order they
	// were created. With escalating remediations, each timed-out step stays in
	// the list with its timedOut time. The 32 newest are kept.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Remediations []*Remediation `json:"remediations,omitempty"`

	// ConditionsHealthyTimestamp is when the node stopped matching every
	// unhealthy condition while it still had remediations; with a healthyDelay
	// the delay counts from here. It is cleared when the node relapses, once
	// the remediations deleted on its recovery are gone.
	// +optional
	ConditionsHealthyTimestamp *metav1.Time `json:"conditionsHealthyTimestamp,omitempty"`

	// HealthyDelayed is true while the node is healthy but its remediations are
	// kept because of spec.healthyDelay (a positive delay counting down, or a
	// negative one waiting for manual confirmation).
	// +optional
	HealthyDelayed *bool `json:"healthyDelayed,omitempty"`
}

// Remediation is one remediation resource created for a node.
type Remediation struct {
	// Resource references the remediation resource.
	// +required
	Resource corev1.ObjectReference `json:"resource"`

	// Started is when the step started: when its resource was created, or
	// the first of its resources when one was gone and created again, as
	// the step's timeout counts from it.
	// +required
	Started metav1.Time `json:"started"`

	// TimedOut is when this remediation was given up: its escalation timeout
	// passed, or its remediator reported Succeeded=False.
	// +optional
	TimedOut *metav1.Time `json:"timedOut,omitempty"`

	// TemplateName is the name of the template the resource was created from.
	// +optional
	TemplateName string `json:"templateName,omitempty"`
}

// NodeHealthCheckList is a list of NodeHealthChecks.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the NodeHealthChecks.
	Items []NodeHealthCheck `json:"items"`
}
