package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			FieldsType: "FieldsV1", FieldsV1: rawFields(make([]byte, 1500)),
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

// rawFields is managed fields of these bytes.
func rawFields(raw []byte) *metav1.FieldsV1 {
	fields := &metav1.FieldsV1{}
	fields.SetRawBytes(raw)
	return fields
}
