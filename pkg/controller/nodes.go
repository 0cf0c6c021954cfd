package controller

import (
	"maps"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// trimNode is the Node informer's transform: it keeps only what the
// controller reads (name, labels, the manual confirmation annotation,
// conditions without heartbeat times, reasons and messages, the
// out-of-service taint) and drops the rest, such as managed fields, images,
// volumes and the other annotations, which make up most of a node object.
func trimNode(obj any) (any, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		trimmed, err := trimNode(tombstone.Obj)
		return cache.DeletedFinalStateUnknown{Key: tombstone.Key, Obj: trimmed}, err
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	trimmed := &corev1.Node{
		TypeMeta: node.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			Labels: interned(node.Labels), Annotations: confirmation(node.Annotations),
			CreationTimestamp: node.CreationTimestamp, DeletionTimestamp: node.DeletionTimestamp,
		},
	}
	if taint := health.OutOfServiceTaint(node); taint != nil {
		// The history records when a node was fenced.
		trimmed.Spec.Taints = []corev1.Taint{*taint}
	}
	if len(node.Status.Conditions) > 0 {
		trimmed.Status.Conditions = make([]corev1.NodeCondition, len(node.Status.Conditions))
		for i, c := range node.Status.Conditions {
			trimmed.Status.Conditions[i] = corev1.NodeCondition{
				Type:   corev1.NodeConditionType(intern(string(c.Type))),
				Status: corev1.ConditionStatus(intern(string(c.Status))), LastTransitionTime: c.LastTransitionTime,
			}
		}
	}
	return trimmed, nil
}

// interned copies labels with every key and value interned: thousands of
// nodes share a few dozen label keys and values (role, zone, instance type,
// architecture), and the cache would otherwise hold each node's own copy.
func interned(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[intern(k)] = intern(v)
	}
	return out
}

// intern returns the canonical copy of s: equal strings share one backing
// array, which the garbage collector frees when no node uses it any more.
func intern(s string) string {
	return unique.Make(s).Value()
}

// confirmation keeps, of a node's annotations, the manual confirmation
// alone: the only one a decision reads.
func confirmation(annotations map[string]string) map[string]string {
	value, ok := annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
	if !ok {
		return nil
	}
	return map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: value}
}

// nodeChanged tells whether a node update can change a decision or the
// history: a condition's type, status or transition time, the exclude
// label, the manual confirmation annotation, the out-of-service taint, or a
// label that some selector uses. Heartbeats change none of these.
// selectorKeys is called only when labels changed, so
// that the frequent updates that change nothing cost no selector lookup.
func nodeChanged(old, updated *corev1.Node, selectorKeys func() map[string]bool) bool {
	if !sameConditions(old.Status.Conditions, updated.Status.Conditions) {
		return true
	}
	if old.Labels[v1alpha1.ExcludeFromRemediationLabel] != updated.Labels[v1alpha1.ExcludeFromRemediationLabel] ||
		hasKey(old.Labels, v1alpha1.ExcludeFromRemediationLabel) != hasKey(updated.Labels, v1alpha1.ExcludeFromRemediationLabel) {
		return true
	}
	if hasKey(old.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) != hasKey(updated.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) {
		return true
	}
	if (health.OutOfServiceTaint(old) == nil) != (health.OutOfServiceTaint(updated) == nil) {
		return true
	}
	if maps.Equal(old.Labels, updated.Labels) {
		return false
	}
	for key := range selectorKeys() {
		if old.Labels[key] != updated.Labels[key] || hasKey(old.Labels, key) != hasKey(updated.Labels, key) {
			return true
		}
	}
	// Control-plane role labels decide the one-at-a-time rule.
	return v1alpha1.IsControlPlane(old.Labels) != v1alpha1.IsControlPlane(updated.Labels)
}

func sameConditions(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ca := range a {
		found := false
		for _, cb := range b {
			if ca.Type == cb.Type {
				found = ca.Status == cb.Status && ca.LastTransitionTime.Equal(&cb.LastTransitionTime)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}
