package nodecache

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// What the cache keeps of a Node is decided here, for the decoder and for
// nodes read otherwise (kubectl nhc, tests): the decisions of pkg/health
// read only health.Node.

// isKeptAnnotation tells whether a health.Node keeps an annotation: the manual
// confirmation, the only one a decision reads, and the end of a watch's
// initial events, which the node informer reads on a bookmark.
func isKeptAnnotation(key string) bool {
	switch key {
	case v1alpha1.ManuallyConfirmedHealthyAnnotation, metav1.InitialEventsAnnotationKey:
		return true
	}
	return false
}

// NodeOf keeps of a node what the controller reads (see health.Node), with label
// keys and values, condition types and statuses interned. It is the one
// definition of what is kept: the protobuf decoder (decode.go) produces the
// same Node without the whole node.
func NodeOf(node *corev1.Node) *health.Node {
	kept := &health.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			Annotations:       keptAnnotations(node.Annotations),
			CreationTimestamp: node.CreationTimestamp, DeletionTimestamp: node.DeletionTimestamp,
		},
		Labels: health.LabelsOf(node.Name, node.Labels),
	}
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].Key == corev1.TaintNodeOutOfService {
			taint := node.Spec.Taints[i]
			kept.OutOfService = &taint
			break
		}
	}
	if len(node.Status.Conditions) > 0 {
		kept.Conditions = make([]health.NodeCondition, len(node.Status.Conditions))
		for i, c := range node.Status.Conditions {
			kept.Conditions[i] = health.NewNodeCondition(c.Type, c.Status, c.LastTransitionTime.Time)
		}
	}
	return kept
}

// intern returns the canonical copy of s: equal strings share one backing
// array, which the garbage collector frees when no node uses it any more.
// Thousands of nodes share a few dozen label keys and values (role, zone,
// instance type, architecture) and condition types.
func intern(s string) string {
	return unique.Make(s).Value()
}

// keptAnnotations returns the kept annotations, nil without any.
func keptAnnotations(annotations map[string]string) map[string]string {
	var out map[string]string
	for key, value := range annotations {
		if isKeptAnnotation(key) {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = value
		}
	}
	return out
}
