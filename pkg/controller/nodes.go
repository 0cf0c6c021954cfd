package controller

import (
	"maps"

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
	if old.Labels[v1alpha1.ExcludeFromRemediationLabel] != updated.Labels[v1alpha1.ExcludeFromRemediationLabel] ||
		hasKey(old.Labels, v1alpha1.ExcludeFromRemediationLabel) != hasKey(updated.Labels, v1alpha1.ExcludeFromRemediationLabel) {
		return true
	}
	if hasKey(old.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) != hasKey(updated.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation) {
		return true
	}
	if (old.OutOfService == nil) != (updated.OutOfService == nil) {
		return true
	}
	if sameLabels(old.Labels, updated.Labels) {
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

func sameConditions(a, b []health.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		// nodecache shares unchanged conditions with the node's next object.
		return true
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

// sameLabels tells whether two label maps are equal; nodecache gives a
// node's next object the same map while its labels do not change.
func sameLabels(a, b map[string]string) bool {
	return sameMap(a, b) || maps.Equal(a, b)
}
