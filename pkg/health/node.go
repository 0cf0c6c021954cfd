package health

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Node is what the controller keeps and reads of a node: a few hundred
// bytes where a corev1.Node, even emptied, takes close to a kilobyte and
// its conditions twice as much. The node cache holds tens of thousands.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Node struct {
	// ObjectMeta has the name, UID, resourceVersion, labels, the kept
	// annotations (IsKeptAnnotation), and the creation and deletion
	// timestamps; nothing else.
	metav1.ObjectMeta
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

// IsKeptAnnotation tells whether a Node keeps an annotation: the manual
// confirmation, the only one a decision reads, and the end of a watch's
// initial events, which the node informer reads on a bookmark.
func IsKeptAnnotation(key string) bool {
	switch key {
	case v1alpha1.ManuallyConfirmedHealthyAnnotation, metav1.InitialEventsAnnotationKey:
		return true
	}
	return false
}

// NodeOf keeps of a node what the controller reads (see Node), with label
// keys and values, condition types and statuses interned. It is the one
// definition of what is kept: nodecache's protobuf decoder produces the same
// Node without the whole node.
func NodeOf(node *corev1.Node) *Node {
	kept := &Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			Labels: interned(node.Labels), Annotations: keptAnnotations(node.Annotations),
			CreationTimestamp: node.CreationTimestamp, DeletionTimestamp: node.DeletionTimestamp,
		},
	}
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].Key == corev1.TaintNodeOutOfService {
			taint := node.Spec.Taints[i]
			kept.OutOfService = &taint
			break
		}
	}
	if len(node.Status.Conditions) > 0 {
		kept.Conditions = make([]NodeCondition, len(node.Status.Conditions))
		for i, c := range node.Status.Conditions {
			kept.Conditions[i] = NodeCondition{
				Type:   corev1.NodeConditionType(Intern(string(c.Type))),
				Status: corev1.ConditionStatus(Intern(string(c.Status))), LastTransitionTime: c.LastTransitionTime,
			}
		}
	}
	return kept
}

// Intern returns the canonical copy of s: equal strings share one backing
// array, which the garbage collector frees when no node uses it any more.
// Thousands of nodes share a few dozen label keys and values (role, zone,
// instance type, architecture) and condition types.
func Intern(s string) string {
	return unique.Make(s).Value()
}

// interned copies labels with every key and value interned.
func interned(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[Intern(k)] = Intern(v)
	}
	return out
}

// keptAnnotations returns the kept annotations, nil without any.
func keptAnnotations(annotations map[string]string) map[string]string {
	var out map[string]string
	for key, value := range annotations {
		if IsKeptAnnotation(key) {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = value
		}
	}
	return out
}
