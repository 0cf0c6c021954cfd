package health

import (
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

// NodeCondition is what a decision reads of a node condition: heartbeat
// times, reasons and messages change nothing.
//
// +k8s:deepcopy-gen=true
type NodeCondition struct {
	Type               corev1.NodeConditionType
	Status             corev1.ConditionStatus
	LastTransitionTime metav1.Time
}

// GetObjectKind is empty, as client-go's typed clients leave a decoded
// object's: the informer's cache holds one kind only.
func (*Node) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
