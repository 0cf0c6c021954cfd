package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

var t0 = metav1.NewTime(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))

func baseNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "1", Labels: map[string]string{"role": "worker", "zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0, LastHeartbeatTime: t0},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: t0, LastHeartbeatTime: t0},
		}},
	}
}

func TestNodeChanged(t *testing.T) {
	selectorKeys := map[string]bool{"role": true}
	cases := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"a heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"conditions in another order", func(n *corev1.Node) {
			n.Status.Conditions[0], n.Status.Conditions[1] = n.Status.Conditions[1], n.Status.Conditions[0]
		}, false},
		{"a status", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"a transition time alone", func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = metav1.Now() }, true},
		{"a condition added", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionTrue})
		}, true},
		{"a condition removed", func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] }, true},
		{"a condition type replaced", func(n *corev1.Node) { n.Status.Conditions[1].Type = corev1.NodeDiskPressure }, true},
		{"a selector label changed", func(n *corev1.Node) { n.Labels["role"] = "infra" }, true},
		{"a selector label removed", func(n *corev1.Node) { delete(n.Labels, "role") }, true},
		{"another label changed", func(n *corev1.Node) { n.Labels["zone"] = "b" }, false},
		{"the exclude label added", func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "true" }, true},
		{"the exclude label added empty", func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "" }, true},
		{"a control-plane role added", func(n *corev1.Node) { n.Labels[v1alpha1.ControlPlaneRoleLabel] = "" }, true},
		{"the confirmation annotation added", func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}
		}, true},
		{"another annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"note": "x"} }, false},
		{"the out-of-service taint added", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
		}, true},
		{"another taint added", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := baseNode()
			updated := old.DeepCopy()
			tc.change(updated)
			looked := false
			keys := func() map[string]bool { looked = true; return selectorKeys }
			assert.Equal(t, tc.want, nodeChanged(nodecache.NodeOf(old), nodecache.NodeOf(updated), keys))
			if tc.name == "a heartbeat" {
				assert.False(t, looked, "a heartbeat costs no selector lookup")
			}
		})
	}
}

func TestSameConditions(t *testing.T) {
	at := func(c corev1.NodeConditionType, s corev1.ConditionStatus, minute int) health.NodeCondition {
		return health.NewNodeCondition(c, s, t0.Add(time.Duration(minute)*time.Minute))
	}
	ready, notReady, pressure := at(corev1.NodeReady, corev1.ConditionTrue, 0), at(corev1.NodeReady, corev1.ConditionFalse, 1), at(corev1.NodeMemoryPressure, corev1.ConditionFalse, 0)
	cases := []struct {
		name string
		a, b []health.NodeCondition
		same bool
	}{
		{"equal", []health.NodeCondition{ready, pressure}, []health.NodeCondition{ready, pressure}, true},
		{"another order", []health.NodeCondition{ready, pressure}, []health.NodeCondition{pressure, ready}, true},
		{"one changed", []health.NodeCondition{ready, pressure}, []health.NodeCondition{notReady, pressure}, false},
		{"the second copy of a duplicated type changed", []health.NodeCondition{ready, ready}, []health.NodeCondition{ready, notReady}, false},
		{"the first copy of a duplicated type changed", []health.NodeCondition{ready, ready}, []health.NodeCondition{notReady, ready}, false},
		{"duplicates in another order", []health.NodeCondition{ready, notReady, ready}, []health.NodeCondition{notReady, ready, ready}, true},
		{"one copy more, one type less", []health.NodeCondition{ready, ready, pressure}, []health.NodeCondition{ready, pressure, pressure}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, sameConditions(tc.a, tc.b))
			assert.Equal(t, tc.same, sameConditions(tc.b, tc.a))
		})
	}
}

// BenchmarkSameConditionsOfAHugeNode compares a node of 10,000 conditions
// with its update that changed the last one: one node's flood of conditions
// must not stall the node handlers.
func BenchmarkSameConditionsOfAHugeNode(b *testing.B) {
	const count = 10000
	old, updated := make([]health.NodeCondition, count), make([]health.NodeCondition, count)
	for i := range old {
		old[i] = health.NewNodeCondition(corev1.NodeConditionType(fmt.Sprintf("Custom%05d", i)), corev1.ConditionFalse, t0.Time)
	}
	copy(updated, old)
	updated[count-1] = health.NewNodeCondition(old[count-1].Type(), corev1.ConditionTrue, t0.Time)
	for b.Loop() {
		if sameConditions(old, updated) {
			b.Fatal("the change is not seen")
		}
	}
}

// realisticNode is a node as a kubelet reports it: managed fields, 50
// images, capacity, addresses, node info.
func realisticNode(i int) *corev1.Node {
	node := baseNode()
	node.Name = fmt.Sprintf("worker-%05d", i)
	node.Labels = map[string]string{"kubernetes.io/hostname": node.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node-role.kubernetes.io/worker": "", "topology.kubernetes.io/zone": "zone-a", "node.kubernetes.io/instance-type": "m5.xlarge"}
	node.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	for _, manager := range []string{"kubelet", "kube-controller-manager", "kube-scheduler"} {
		node.ManagedFields = append(node.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t0,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: make([]byte, 1500)},
		})
	}
	for j := range 50 {
		node.Status.Images = append(node.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064d", j, j), fmt.Sprintf("registry.example.com/team/app-%d:v1.%d.0", j, j)},
			SizeBytes: 123456789,
		})
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficient", Message: "kubelet has sufficient resources", LastTransitionTime: t0, LastHeartbeatTime: t0})
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: node.Name}}
	node.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: "0123456789abcdef", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "v1.37.1"}
	node.Spec.PodCIDR, node.Spec.ProviderID = "10.244.1.0/24", "aws:///zone-a/i-0123456789"
	return node
}
