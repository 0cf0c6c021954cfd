package check

import (
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// When a remediation resource goes: not before its node has been healthy
// for the whole healthyDelay, and, once its node is gone or no longer
// selected, soon.

// The invariants of this file, by name.
const (
	// InvHealthyDelay: the controller deletes a remediation resource only
	// once its node has been healthy for the whole healthyDelay, and
	// never when healthyDelay is negative, unless the node is manually
	// confirmed healthy (the spec's "HealthyDelay").
	InvHealthyDelay = "no-deletion-before-healthy-delay"
	// InvConfirmationScope: a manual confirmation is consumed by the
	// recovery it confirms: "Once the node meets all other healthy
	// criteria, NHC will delete the remediation.medik8s.io/manually-
	// confirmed-healthy annotation from the Node, and proceed with deleting
	// the remediation CR" (the spec's "HealthyDelay"). A confirmation that
	// released a resource of its node releases none created after.
	InvConfirmationScope = "a-confirmation-confirms-one-recovery"
	// InvOrphanDeleted: the remediation resource of a node that is gone,
	// or that its NodeHealthCheck no longer selects, is deleted within
	// deletionBound, unless its remediator expects the node's deletion
	// (PermanentNodeDeletionExpected=True) and has not succeeded
	// (docs/decisions.md, row 9: "a node it no longer selects is released
	// like a deleted one"; docs/remediation.md, "The contract with
	// remediators").
	InvOrphanDeleted = "orphaned-remediation-deleted"
)

// healthyDelayRules checks a delete the controller sent against
// healthyDelay. It judges a resource whose node stayed selected since it
// was created (an orphan's deletion is due at once), not confirmed healthy
// pictureLag around the delete, in calm: the controller counts a recovery
// from the first sync that sees the node healthy, and starts it again at
// each sync that sees it unhealthy. A span in which the node was unhealthy
// is one it saw when it lasted pictureLag from the change that woke it,
// in calm, its NodeHealthCheck's kinds readable.
func (c *Checker) healthyDelayRules(call *apiserver.Call, resp *http.Response) {
	t := call.Arrived
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted || !c.freshThrough(t.Add(-pictureLag)) {
		return
	}
	life := c.deletedLife(call)
	if life == nil {
		return
	}
	delay, ok := c.healthyDelayAround(life, t)
	if !ok || c.orphanedSince(life, t) {
		return
	}
	if since, confirmed := c.confirmedAround(life.node, t); confirmed {
		if used := c.confirmationUsed(life, since); used != nil {
			c.fail(InvConfirmationScope, "%s/%s of node %s, created at %s, deleted on the manual confirmation the node carries since %s, which released %s/%s at %s",
				call.Namespace, call.Name, life.node, life.created.Format("15:04:05"), since.Format("15:04:05"),
				used.namespace, used.name, used.deleteSent.Format("15:04:05"))
		}
		return
	}
	nhc := c.nhcAt(life.ownerName, t)
	if delay < 0 {
		c.fail(InvHealthyDelay, "%s/%s of node %s deleted with NodeHealthCheck %s's healthyDelay %s, and no manual confirmation", call.Namespace, call.Name, life.node, nhc.Name, delay)
		return
	}
	// The controller stamps the recovery's start on the resource in whole
	// seconds (RFC 3339, as upstream): the delay may end up to
	// timestampGrain early.
	if from, to, seen := c.lastSeenUnhealthy(nhc, life, t, delay); seen && to.After(t.Add(timestampGrain-delay)) {
		c.fail(InvHealthyDelay, "%s/%s of node %s deleted %s after the node was last unhealthy (from %s to %s), before NodeHealthCheck %s's healthyDelay %s passed",
			call.Namespace, call.Name, life.node, t.Sub(to), from.Format("15:04:05"), to.Format("15:04:05"), nhc.Name, delay)
	}
}

// deletedLife is the resource a delete the controller sent landed on.
func (c *Checker) deletedLife(call *apiserver.Call) *resourceLife {
	k, ok := cluster.KindOf(call.GVR)
	if !ok {
		return nil
	}
	for i := range c.lives {
		l := &c.lives[i]
		if l.namespace == call.Namespace && l.name == call.Name && cluster.KindOfRemediation(l.obj.GetKind()) == k &&
			!l.created.After(call.Arrived) && (l.deleted.IsZero() || !l.deleted.Before(call.Arrived)) {
			return l
		}
	}
	return nil
}

// healthyDelayAround is the healthyDelay the controller may have read
// for a resource's NodeHealthCheck pictureLag before t: the least one not
// negative of its versions then, else a negative one; false when the
// NodeHealthCheck was another, or being deleted, meanwhile.
func (c *Checker) healthyDelayAround(life *resourceLife, t time.Time) (time.Duration, bool) {
	delay, negative := time.Duration(-1), false
	ok := c.eachNHCVersion(life.ownerName, t.Add(-pictureLag), t, func(_ time.Time, nhc *v1alpha1.NodeHealthCheck) bool {
		if nhc == nil || nhc.UID != life.owner || nhc.DeletionTimestamp != nil {
			return false
		}
		d := time.Duration(0)
		if nhc.Spec.HealthyDelay != nil {
			d = nhc.Spec.HealthyDelay.Duration
		}
		switch {
		case d < 0:
			negative = true
		case delay < 0 || d < delay:
			delay = d
		}
		return true
	})
	if delay < 0 && negative {
		delay = -time.Second
	}
	return delay, ok
}

// eachNHCVersion calls f with every version of a NodeHealthCheck from
// from to to (the one at from first), until f returns false; it tells
// whether none did.
func (c *Checker) eachNHCVersion(name string, from, to time.Time, f func(at time.Time, nhc *v1alpha1.NodeHealthCheck) bool) bool {
	typed := func(u *unstructured.Unstructured) *v1alpha1.NodeHealthCheck {
		if u == nil {
			return nil
		}
		return typedOf[v1alpha1.NodeHealthCheck](c, u)
	}
	if !f(from, typed(at(c.nhcs[name], from))) {
		return false
	}
	for _, v := range c.nhcs[name] {
		if v.at.After(from) && !v.at.After(to) && !f(v.at, typed(v.obj)) {
			return false
		}
	}
	return true
}

// eachNodeVersion calls f with every version of a node from from to to
// (the one at from first).
func (c *Checker) eachNodeVersion(name string, from, to time.Time, f func(at time.Time, node *corev1.Node)) {
	typed := func(u *unstructured.Unstructured) *corev1.Node {
		if u == nil {
			return nil
		}
		return typedOf[corev1.Node](c, u)
	}
	f(from, typed(at(c.nodes[name], from)))
	for _, v := range c.nodes[name] {
		if v.at.After(from) && !v.at.After(to) {
			f(v.at, typed(v.obj))
		}
	}
}

// orphanedSince tells whether a resource's node was gone, or not selected
// by its NodeHealthCheck, at an instant from its creation to t: its
// deletion was due then, and stays due.
func (c *Checker) orphanedSince(life *resourceLife, t time.Time) bool {
	orphaned := false
	c.eachNodeVersion(life.node, life.created, t, func(at time.Time, node *corev1.Node) {
		nhc := c.nhcAt(life.ownerName, at)
		orphaned = orphaned || node == nil || nhc == nil || nhc.UID != life.owner || !selects(nhc, node)
	})
	c.eachNHCVersion(life.ownerName, life.created, t, func(at time.Time, nhc *v1alpha1.NodeHealthCheck) bool {
		node := c.nodeAt(life.node, at)
		orphaned = orphaned || node == nil || nhc == nil || nhc.UID != life.owner || !selects(nhc, node)
		return true
	})
	return orphaned
}

// confirmedAround tells whether a node carried the manual confirmation
// at an instant pictureLag before t or since, and since when it carried
// the last one it did then without a break.
func (c *Checker) confirmedAround(name string, t time.Time) (time.Time, bool) {
	from := t.Add(-pictureLag)
	var run, since time.Time
	confirmed := false
	c.eachNodeVersion(name, time.Time{}, t, func(at time.Time, node *corev1.Node) {
		on := false
		if node != nil {
			_, on = node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
		}
		switch {
		case !on:
			run = time.Time{}
		case run.IsZero():
			run = at
		}
		switch {
		case !at.After(from):
			// The version the window starts with.
			confirmed, since = on, run
		case on:
			confirmed, since = true, run
		}
	})
	return since, confirmed
}

// confirmationUsed is a resource of the same node and NodeHealthCheck,
// created before a deleted one, that the controller deleted at a recovery
// (the node selected and healthy) while the node carried the confirmation
// it carries since since, with calm for pictureLag after, so that the
// controller's removal of the annotation landed: that confirmation
// confirmed that recovery, not the deleted resource's. An orphan's
// deletion consumes none. Nil when there is none.
func (c *Checker) confirmationUsed(life *resourceLife, since time.Time) *resourceLife {
	for i := range c.lives {
		l := &c.lives[i]
		if l == life || l.node != life.node || l.owner != life.owner || !l.deletedByController || l.deleteSent.Before(since) ||
			!life.created.After(l.deleteSent.Add(timestampGrain)) || !c.calmOver(l.deleteSent, l.deleteSent.Add(pictureLag)) ||
			c.orphanedSince(l, l.deleteSent) || !c.healthyOver(l, l.deleteSent.Add(-pictureLag), l.deleteSent) {
			continue
		}
		return l
	}
	return nil
}

// healthyOver tells whether a resource's node matched none of its
// NodeHealthCheck's unhealthy conditions from one instant to another.
func (c *Checker) healthyOver(l *resourceLife, from, to time.Time) bool {
	healthy := true
	c.eachNodeVersion(l.node, from, to, func(at time.Time, node *corev1.Node) {
		nhc := c.nhcAt(l.ownerName, at)
		if node == nil || nhc == nil {
			healthy = false
			return
		}
		if _, matching := conditionsHold(nhc, node, at); matching {
			healthy = false
		}
	})
	return healthy
}

// lastSeenUnhealthy is the last span, from a resource's creation to t,
// in which its node matched its NodeHealthCheck's unhealthy conditions (as
// the spec then had them) and the controller saw it (pictureLag long from
// the change that began it, in calm, the NodeHealthCheck's kinds
// readable). A span that follows a recovery as long as healthyDelay is not
// judged: the resource was due for deletion then, and its deletion still
// is.
func (c *Checker) lastSeenUnhealthy(nhc *v1alpha1.NodeHealthCheck, life *resourceLife, t time.Time, delay time.Duration) (from, to time.Time, seen bool) {
	// The controller saw the node unhealthy when it created the resource.
	spanFrom, healthyFrom := life.created.Add(-pictureLag), time.Time{}
	ill, due := true, false
	end := func(at time.Time) {
		if at.Sub(spanFrom) >= pictureLag && c.freshOver(spanFrom, spanFrom.Add(pictureLag)) && c.readableOver(c.kindsReadOver(nhc, spanFrom, spanFrom.Add(pictureLag)), spanFrom, spanFrom.Add(pictureLag)) {
			from, to, seen = spanFrom, at, !due
		}
	}
	for _, at := range c.changesOf(life, t) {
		node, then := c.nodeAt(life.node, at), c.nhcAt(nhc.Name, at)
		matching := false
		if node != nil && then != nil {
			_, matching = conditionsHold(then, node, at)
		}
		switch {
		case matching && !ill:
			due = due || at.Sub(healthyFrom) >= delay
			ill, spanFrom = true, at
		case !matching && ill:
			ill, healthyFrom = false, at
			end(at)
		}
	}
	if ill {
		end(t)
	}
	return from, to, seen
}

// changesOf are the instants from a resource's creation to t at which its
// node or its NodeHealthCheck changed, in order: a node may recover at the
// very instant its resource is created.
func (c *Checker) changesOf(life *resourceLife, t time.Time) []time.Time {
	var instants []time.Time
	for _, versions := range [][]version{c.nodes[life.node], c.nhcs[life.ownerName]} {
		for _, v := range versions {
			if !v.at.Before(life.created) && !v.at.After(t) {
				instants = append(instants, v.at)
			}
		}
	}
	slices.SortFunc(instants, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(instants, func(a, b time.Time) bool { return a.Equal(b) })
}

// orphans checks that the remediation resources of nodes gone, or no
// longer selected by their NodeHealthCheck, are deleted within
// deletionBound of the latest of that, the calm's start and the instant
// every kind their NodeHealthCheck reads could be read again, or it no
// longer read the one that could not be (countdownReadable): while one
// cannot, it decides nothing. A disabled NodeHealthCheck
// still cleans up (docs/decisions.md); a resource held by a remediator's
// finalizer counts as deleted once it is being deleted.
func (c *Checker) orphans(all []remediationObj, calm bool) {
	now := time.Now()
	seen := map[runKey]bool{}
	for _, r := range all {
		nhc := c.nhcAt(r.ownerName, now)
		if nhc == nil || nhc.UID != r.owner || nhc.DeletionTimestamp != nil || r.obj.GetDeletionTimestamp() != nil || expectsNodeDeletion(r.obj) {
			continue
		}
		node := c.nodeAt(r.node, now)
		if node != nil && selects(nhc, node) {
			continue
		}
		key := runKey{nhc: r.ownerName, node: r.node}
		seen[key] = true
		c.countdownReadable(c.orphanSince, key, nhc, r.obj.GetKind())
		if since, late := c.cleanupOverdue(c.orphanSince, key, nhc, calm, deletionBound); late {
			why := "is gone"
			if node != nil {
				why = "is no longer selected"
			}
			c.fail(InvOrphanDeleted, "%s of NodeHealthCheck %s still exists, its node %s %s since %s", describe(r.obj), nhc.Name, r.node, why, since.Format("15:04:05"))
		}
	}
	forgetUnseen(c.orphanSince, seen)
}

// expectsNodeDeletion tells whether a remediator reports that it expects
// its node's deletion (PermanentNodeDeletionExpected=True) and has not
// succeeded yet.
func expectsNodeDeletion(obj *unstructured.Unstructured) bool {
	return conditionIs(obj, v1alpha1.PermanentNodeDeletionExpectedCondition, metav1.ConditionTrue) &&
		!conditionIs(obj, v1alpha1.SucceededCondition, metav1.ConditionTrue)
}

// conditionIs tells whether a remediation resource reports a condition
// with a status.
func conditionIs(obj *unstructured.Unstructured, typ string, status metav1.ConditionStatus) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == typ && m["status"] == string(status) {
			return true
		}
	}
	return false
}
