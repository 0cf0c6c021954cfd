package nodecache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

func TestNodeOfKeepsWhatTheControllerReads(t *testing.T) {
	now := time.Now()
	t0 := metav1.NewTime(now.Add(-time.Hour))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: "4711", CreationTimestamp: t0,
			Labels:        map[string]string{"role": "worker", "topology.kubernetes.io/zone": "a"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0, LastHeartbeatTime: metav1.NewTime(now),
				Reason: "KubeletReady", Message: "kubelet is posting ready status",
			}},
			Images: []corev1.ContainerImage{{Names: []string{"registry.example.com/app:v1"}, SizeBytes: 123456789}},
		},
	}
	assert.Equal(t, &health.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: "4711", CreationTimestamp: t0,
		},
		Labels:     health.LabelsOf("worker-1", map[string]string{"role": "worker", "topology.kubernetes.io/zone": "a"}),
		Conditions: []health.NodeCondition{health.NewNodeCondition(corev1.NodeReady, corev1.ConditionTrue, t0.Time)},
	}, NodeOf(node), "no annotation a decision reads, no heartbeat: a heartbeat changes nothing kept")

	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0}
	second := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "second", Effect: corev1.TaintEffectNoSchedule}
	node.Spec.Taints = append(node.Spec.Taints, outOfService, second)
	assert.Equal(t, &outOfService, NodeOf(node).OutOfService, "the history records the fencing")

	node.DeletionTimestamp = &t0
	node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = ""
	kept := NodeOf(node)
	assert.Equal(t, &t0, kept.DeletionTimestamp)
	assert.Equal(t, map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}, kept.Annotations, "the manual confirmation is kept")

	bookmark := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true", "other": "x"}}}
	assert.Equal(t, map[string]string{metav1.InitialEventsAnnotationKey: "true"}, NodeOf(bookmark).Annotations, "the informer reads a bookmark's")
}
