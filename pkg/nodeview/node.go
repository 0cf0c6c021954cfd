// Package nodeview is a node as the controller's decisions read it: what
// is kept of a corev1.Node (Node, built by Of), and which of its changes
// count, to the node cache (Unchanged) and to a decision (Matters). A node
// field that starts to count is kept here and decoded by the node cache's
// protobuf decoder (pkg/nodecache/decode.go), and nowhere else.
package nodeview

import (
	"maps"
	"slices"

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
	// Meta has the name, UID, resourceVersion, the kept annotations
	// (IsKeptAnnotation), and the creation and deletion timestamps.
	Meta
	// Labels are the node's labels, shared with the nodes that have the same.
	Labels Labels
	// Conditions are the node's conditions in its order.
	Conditions []Condition
	// OutOfService is the node's first out-of-service taint, which fencing
	// remediators set once the node is powered off; nil without.
	OutOfService *corev1.Taint
}

// GetObjectKind is empty, as client-go's typed clients leave a decoded
// object's: the informer's cache holds one kind only.
func (*Node) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// Of keeps of a node what the controller reads, with its labels shared
// through table (nil: with no other node). It is the one definition of
// what is kept: the node cache's protobuf decoder produces the same Node
// without the whole node.
func Of(node *corev1.Node, table *LabelTable) *Node {
	kept := &Node{
		Meta: Meta{
			Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			Annotations:       keptAnnotations(node.Annotations),
			CreationTimestamp: node.CreationTimestamp, DeletionTimestamp: node.DeletionTimestamp,
		},
		Labels: LabelsOf(node.Name, node.Labels, table),
	}
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].Key == corev1.TaintNodeOutOfService {
			taint := node.Spec.Taints[i]
			kept.OutOfService = &taint
			break
		}
	}
	if len(node.Status.Conditions) > 0 {
		kept.Conditions = make([]Condition, len(node.Status.Conditions))
		for i, c := range node.Status.Conditions {
			kept.Conditions[i] = NewCondition(c.Type, c.Status, c.LastTransitionTime.Time)
		}
	}
	return kept
}

// IsKeptAnnotation tells whether a Node keeps an annotation: the manual
// confirmation, the only one a decision reads, and the end of a watch's
// initial events, which the node informer reads on a bookmark. The
// protobuf decoder asks with the key's bytes, which cost no string.
func IsKeptAnnotation[Key ~string | ~[]byte](key Key) bool {
	switch string(key) {
	case v1alpha1.ManuallyConfirmedHealthyAnnotation, metav1.InitialEventsAnnotationKey:
		return true
	}
	return false
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

// Unchanged tells whether an update changed nothing a Node keeps but the
// resourceVersion, as a kubelet's heartbeat does: the node cache need not
// store it. It compares every field Of keeps.
func Unchanged(a, b *Node) bool {
	return a.Name == b.Name && a.UID == b.UID &&
		a.CreationTimestamp.Equal(&b.CreationTimestamp) &&
		a.DeletionTimestamp.Equal(b.DeletionTimestamp) &&
		a.Labels.Equal(b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Conditions, b.Conditions) &&
		sameTaint(a.OutOfService, b.OutOfService)
}

func sameTaint(a, b *corev1.Taint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect && a.TimeAdded.Equal(b.TimeAdded)
}

// Matters tells whether a node update can change a decision or the
// history: a condition's type, status or transition time, the exclude
// label, the manual confirmation annotation, the out-of-service taint, or a
// label that some selector uses. Heartbeats change none of these, and the
// rest of what a Node keeps no decision reads: the name and UID are the
// node's identity, its timestamps no rule reads, and of the taint the
// history reads the time once, when it appears. selectorKeys is called only
// when labels changed, so that the frequent updates that change nothing
// cost no selector lookup.
func Matters(old, updated *Node, selectorKeys func() map[string]bool) bool {
	if !sameConditions(old.Conditions, updated.Conditions) {
		return true
	}
	if hasKey(old.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) != hasKey(updated.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) {
		return true
	}
	if (old.OutOfService == nil) != (updated.OutOfService == nil) {
		return true
	}
	if old.Labels.Equal(updated.Labels) {
		return false
	}
	if labelChanged(old.Labels, updated.Labels, v1alpha1.ExcludeFromRemediationLabel) {
		return true
	}
	for key := range selectorKeys() {
		if labelChanged(old.Labels, updated.Labels, key) {
			return true
		}
	}
	// Control-plane role labels decide the one-at-a-time rule.
	return v1alpha1.IsControlPlane(old.Labels) != v1alpha1.IsControlPlane(updated.Labels)
}

func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}

// labelChanged tells whether a label was added, removed or given another
// value.
func labelChanged(old, updated Labels, key string) bool {
	oldValue, had := old.Lookup(key)
	value, has := updated.Lookup(key)
	return had != has || oldValue != value
}
