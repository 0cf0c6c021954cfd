package nodecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

func TestTrimKeepsWhatTheControllerReads(t *testing.T) {
	node := fixtureNode(t)
	n := Trim(node)
	assert.Equal(t, node.Name, n.Name)
	assert.Equal(t, node.UID, n.UID)
	assert.Equal(t, node.Labels, n.Labels)
	assert.Nil(t, n.Annotations, "no annotation a decision reads")
	assert.Equal(t, node.ResourceVersion, n.ResourceVersion)
	assert.Len(t, n.Status.Conditions, len(node.Status.Conditions))
	assert.Equal(t, node.Status.Conditions[0].LastTransitionTime, n.Status.Conditions[0].LastTransitionTime)
	assert.Empty(t, n.Status.Conditions[0].LastHeartbeatTime, "a heartbeat changes nothing kept")
	assert.Empty(t, n.ManagedFields)
	assert.Empty(t, n.Status.Images)
	assert.Empty(t, n.Spec.Taints)

	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0}
	node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}, outOfService}
	assert.Equal(t, []corev1.Taint{outOfService}, Trim(node).Spec.Taints, "the history records the fencing")

	node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = ""
	assert.Equal(t, map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}, Trim(node).Annotations, "the manual confirmation is kept")

	bookmark := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true", "other": "x"}}}
	assert.Equal(t, map[string]string{metav1.InitialEventsAnnotationKey: "true"}, Trim(bookmark).Annotations, "the informer reads a bookmark's")
}
