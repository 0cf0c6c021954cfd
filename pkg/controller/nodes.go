package controller

import (
	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// nodeChanged tells whether a node update can change a decision or the
// history: a condition's type, status or transition time, the exclude
// label, the manual confirmation annotation, the out-of-service taint, or a
// label that some selector uses. Heartbeats change none of these.
// selectorKeys is called only when labels changed, so
// that the frequent updates that change nothing cost no selector lookup.
func nodeChanged(old, updated *health.Node, selectorKeys func() map[string]bool) bool {
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

// sameConditions tells whether two condition lists hold the same
// conditions, each as often, in any order. A kubelet and
// node-problem-detector keep their order, so the lists are compared
// position by position first, and counted only when that fails. Either way
// it is linear however many conditions a node has, and a change of any copy
// of a duplicated type counts: a decision reads every copy
// (matchConditions).
func sameConditions(a, b []health.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		// nodecache shares unchanged conditions with the node's next object.
		return true
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return true
	}
	counts := make(map[health.NodeCondition]int, len(a)-i)
	for j := i; j < len(a); j++ {
		counts[a[j]]++
		counts[b[j]]--
	}
	for _, n := range counts {
		if n != 0 {
			return false
		}
	}
	return true
}

func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}

// labelChanged tells whether a label was added, removed or given another
// value.
func labelChanged(old, updated health.Labels, key string) bool {
	oldValue, had := old.Lookup(key)
	value, has := updated.Lookup(key)
	return had != has || oldValue != value
}
