package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

// benchmarkNHCs is how many NodeHealthChecks the handler benchmarks route
// among.
const benchmarkNHCs = 10

// nodeUpdates are updates a node gets, from the most frequent: a heartbeat
// (once trimmed, only the resourceVersion differs), a label no selector
// uses, and a condition that changes.
var nodeUpdates = []struct {
	name   string
	change func(*corev1.Node)
}{
	{"heartbeat", func(*corev1.Node) {}},
	{"other-label", func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "zone-b" }},
	{"condition", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }},
}

// trimmedUpdate is a realistic node of role-3 and its update, both trimmed
// as the informer caches them.
func trimmedUpdate(change func(*corev1.Node)) (old, updated *corev1.Node) {
	node := realisticNode(1)
	node.Labels["role"] = "role-3"
	next := node.DeepCopy()
	next.ResourceVersion = "2"
	change(next)
	return nodecache.Trim(node), nodecache.Trim(next)
}

// BenchmarkNodeChanged is the filter that drops the updates that cannot
// change a decision.
func BenchmarkNodeChanged(b *testing.B) {
	keys := map[string]bool{"role": true}
	for _, u := range nodeUpdates {
		b.Run(u.name, func(b *testing.B) {
			old, updated := trimmedUpdate(u.change)
			b.ReportAllocs()
			for b.Loop() {
				nodeChanged(old, updated, func() map[string]bool { return keys })
			}
		})
	}
}

// BenchmarkUpdateNode is the node update handler with 10 NodeHealthChecks:
// the filter, and the routing of a change to the one that selects the node.
func BenchmarkUpdateNode(b *testing.B) {
	c := controllerWithNHCs(b)
	for _, u := range nodeUpdates {
		b.Run(u.name, func(b *testing.B) {
			old, updated := trimmedUpdate(u.change)
			b.ReportAllocs()
			for b.Loop() {
				c.updateNode(klog.Background(), old, updated)
			}
		})
	}
}

// BenchmarkEnqueueSelecting is the routing of a node to the
// NodeHealthChecks that select it, among 10.
func BenchmarkEnqueueSelecting(b *testing.B) {
	c := controllerWithNHCs(b)
	labels := map[string]string{"role": "role-3", "kubernetes.io/hostname": "worker-1", v1alpha1.ControlPlaneRoleLabel: ""}
	b.ReportAllocs()
	for b.Loop() {
		c.enqueueSelecting(labels, nil)
	}
}

func controllerWithNHCs(b *testing.B) *Controller {
	nhcs := make([]*v1alpha1.NodeHealthCheck, benchmarkNHCs)
	for i := range nhcs {
		nhcs[i] = selectingNHC(fmt.Sprintf("nhc-%d", i), fmt.Sprintf("role-%d", i))
	}
	return newTestController(b, nhcs...)
}
