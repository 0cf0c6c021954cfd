package sim

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The liveness invariants beside the first remediation's (liveness.go):
// what must follow once it runs.

// The invariants of this file, by name.
const (
	InvDeletedWhenHealthy = "healthy-node-remediation-deleted"
)

// deletionBound is how long after a node is healthy, its healthyDelay
// passed and nothing in the way, its remediation may still exist.
const deletionBound = 2 * time.Minute

// recoveries checks that the remediation of a node healthy by its
// NodeHealthCheck's conditions, selected, with healthyDelay not negative,
// is deleted within healthyDelay + deletionBound of the later of its
// recovery and the calm's start. A resource held by a remediator's
// finalizer counts as deleted once it is being deleted; a kind the
// controller cannot read holds what it shows.
func (c *checker) recoveries(all []remediationObj, calm bool) {
	now := time.Now()
	seen := map[runKey]bool{}
	for _, r := range all {
		key := runKey{nhc: r.ownerName, node: r.node}
		nhc, node := c.nhcAt(r.ownerName, now), c.nodeAt(r.node, now)
		if nhc == nil || node == nil || nhc.DeletionTimestamp != nil || !selects(nhc, node) || r.obj.GetDeletionTimestamp() != nil {
			continue
		}
		if _, matching := conditionsHold(nhc, node, now); matching {
			continue
		}
		seen[key] = true
		since, ok := c.healthySince[key]
		if !ok {
			c.healthySince[key] = now
			continue
		}
		delay := time.Duration(0)
		if nhc.Spec.HealthyDelay != nil {
			delay = nhc.Spec.HealthyDelay.Duration
		}
		if _, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
			delay = 0
		}
		if !calm || delay < 0 || c.unreadableLately(nhc, now) || meta.IsStatusConditionTrue(nhc.Status.Conditions, v1alpha1.ConditionDisabled) {
			continue
		}
		start := since
		if c.calmSince.After(start) {
			start = c.calmSince
		}
		if !now.Before(start.Add(delay + deletionBound)) {
			c.fail(InvDeletedWhenHealthy, "%s of NodeHealthCheck %s still exists, its node %s healthy since %s (healthyDelay %s): %s",
				describe(r.obj), nhc.Name, r.node, since.Format("15:04:05"), delay, conditionsOf(node))
		}
	}
	for key := range c.healthySince {
		if !seen[key] {
			delete(c.healthySince, key)
		}
	}
}
