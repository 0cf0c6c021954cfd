package health

import (
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// What a decision reads of a node: its conditions against the unhealthy
// ones, and its exclude label.

// conditionMatch is how a node's conditions compare with the unhealthy conditions.
type conditionMatch struct {
	// expired is the first unhealthy condition, in spec order, that the node
	// has held for its whole duration.
	expired *v1alpha1.UnhealthyCondition
	// pending is the matching unhealthy condition whose duration passes first,
	// when none has expired.
	pending *v1alpha1.UnhealthyCondition
	// since is the matching node condition's lastTransitionTime.
	since time.Time
	// expires is when the matching condition's duration passes.
	expires time.Time
}

// matchConditions compares a node's conditions with the unhealthy conditions.
// It allocates nothing: both lists are short.
func matchConditions(node *nodeview.Node, unhealthy []v1alpha1.UnhealthyCondition, now time.Time) conditionMatch {
	var m conditionMatch
	for i := range unhealthy {
		uc := &unhealthy[i]
		for _, nc := range node.Conditions {
			if nc.Type() != uc.Type || nc.Status() != uc.Status {
				continue
			}
			since := nc.LastTransitionTime()
			expires := since.Add(uc.Duration.Duration)
			if !now.Before(expires) {
				return conditionMatch{expired: uc, since: since, expires: expires}
			}
			if m.pending == nil || expires.Before(m.expires) {
				m = conditionMatch{pending: uc, since: since, expires: expires}
			}
		}
	}
	return m
}

// conditionsHold tells whether one of the unhealthy conditions matches a
// node's conditions, whether its duration has passed or not.
func conditionsHold(node *nodeview.Node, unhealthy []v1alpha1.UnhealthyCondition) bool {
	m := matchConditions(node, unhealthy, time.Time{})
	return m.expired != nil || m.pending != nil
}

// excluded tells whether a node carries the exclude label with "true": it
// gets no new remediation, neither planned nor sent.
func excluded(l nodeview.Labels) bool {
	return l.Get(v1alpha1.ExcludeFromRemediationLabel) == "true"
}
