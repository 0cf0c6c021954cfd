// Package nodecache is the controller's node informer: it keeps, of every
// Node, only what the controller reads, and decodes it that way straight
// from the API server's protobuf, so that the heartbeats of thousands of
// kubelets cost neither the decoding nor the garbage of whole Node objects.
package nodecache

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// keptAnnotations are the annotations a trimmed node keeps: the manual
// confirmation, the only one a decision reads, and the end of a watch's
// initial events, which the informer itself reads on a bookmark.
var keptAnnotations = []string{v1alpha1.ManuallyConfirmedHealthyAnnotation, metav1.InitialEventsAnnotationKey}

// Trim keeps only what the controller reads of a node: name, UID,
// resourceVersion, labels, the kept annotations, creation and deletion
// timestamps, the out-of-service taint, and conditions without heartbeat
// times, reasons and messages. It drops the rest, such as managed fields,
// images, volumes and the other annotations, which make up most of a node.
// The protobuf decoder produces the same node without the whole one.
func Trim(node *corev1.Node) *corev1.Node {
	trimmed := &corev1.Node{
		TypeMeta: node.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion,
			Labels: interned(node.Labels), Annotations: kept(node.Annotations),
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
	return trimmed
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

// kept returns the kept annotations, nil without any.
func kept(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, key := range keptAnnotations {
		if value, ok := annotations[key]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[key] = value
		}
	}
	return out
}
