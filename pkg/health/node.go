package health

import (
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Node is what the controller keeps and reads of a node: a few hundred
// bytes where a corev1.Node, even emptied, takes close to a kilobyte and
// its conditions twice as much. The node cache holds tens of thousands.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Node struct {
	// ObjectMeta has the name, UID, resourceVersion, the kept annotations
	// (the manual confirmation; nodecache keeps them), and the creation and
	// deletion timestamps; nothing else. Its Labels stay nil.
	metav1.ObjectMeta
	// Labels are the node's labels, shared with the nodes that have the same.
	// They shadow ObjectMeta.Labels.
	Labels Labels
	// Conditions are the node's conditions in its order.
	Conditions []NodeCondition
	// OutOfService is the node's first out-of-service taint, which fencing
	// remediators set once the node is powered off; nil without.
	OutOfService *corev1.Taint
}

// NodeCondition is what a decision reads of a node condition: its type,
// status and transition time; heartbeat times, reasons and messages change
// nothing. It takes 24 bytes where the three as fields took 56: the type
// and status are one interned pair, and the time is kept without its
// location. Equal conditions are equal values (==).
type NodeCondition struct {
	kind        unique.Handle[conditionKind]
	seconds     int64
	nanoseconds int32
}

type conditionKind struct {
	conditionType corev1.NodeConditionType
	status        corev1.ConditionStatus
}

// NewNodeCondition returns a condition of that type and status that last
// changed at transition.
func NewNodeCondition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus, transition time.Time) NodeCondition {
	return NodeCondition{
		kind:    unique.Make(conditionKind{conditionType: conditionType, status: status}),
		seconds: transition.Unix(), nanoseconds: int32(transition.Nanosecond()),
	}
}

// Type is the condition's type.
func (c NodeCondition) Type() corev1.NodeConditionType {
	if c.kind == (unique.Handle[conditionKind]{}) {
		return ""
	}
	return c.kind.Value().conditionType
}

// Status is the condition's status.
func (c NodeCondition) Status() corev1.ConditionStatus {
	if c.kind == (unique.Handle[conditionKind]{}) {
		return ""
	}
	return c.kind.Value().status
}

// LastTransitionTime is when the condition's status last changed, in UTC.
func (c NodeCondition) LastTransitionTime() time.Time {
	return time.Unix(c.seconds, int64(c.nanoseconds)).UTC()
}

// DeepCopyInto copies the condition, which holds nothing mutable.
func (c *NodeCondition) DeepCopyInto(out *NodeCondition) {
	*out = *c
}

// GetObjectKind is empty, as client-go's typed clients leave a decoded
// object's: the informer's cache holds one kind only.
func (*Node) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
