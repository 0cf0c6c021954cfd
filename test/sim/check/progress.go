package check

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The liveness invariants beside the first remediation's (liveness.go):
// what must follow once it runs.

// The invariants of this file, by name.
const (
	// InvDeletedWhenHealthy: a healthy node's remediation is deleted once
	// its healthyDelay passed (the spec's "HealthyDelay"; the workflow:
	// "Potentially existing remediation CRs are deleted for healthy
	// nodes").
	InvDeletedWhenHealthy = "healthy-node-remediation-deleted"
	// InvLeaseReleased: a node lease is released once nothing runs on the
	// node (docs/remediation.md, "Node leases": release).
	InvLeaseReleased = "node-lease-released"
)

// deletionBound is how long after a node is healthy, its healthyDelay
// passed and nothing in the way, its remediation may still exist.
const deletionBound = 2 * time.Minute

// recoveries checks that the remediation of a node healthy by its
// NodeHealthCheck's conditions, selected, with healthyDelay not negative,
// is deleted within healthyDelay + deletionBound of the latest of its
// recovery, the moment its healthyDelay or a manual confirmation made the
// deletion due, and the calm's start. A resource held by a remediator's
// finalizer counts as deleted once it is being deleted; a kind the
// controller cannot read holds what it shows.
func (c *Checker) recoveries(all []remediationObj, calm bool) {
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
		delay := time.Duration(0)
		if nhc.Spec.HealthyDelay != nil {
			delay = nhc.Spec.HealthyDelay.Duration
		}
		if _, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
			delay = 0
		}
		if delay < 0 {
			// Kept until a manual confirmation: nothing is due, and the
			// clock starts when the spec or the annotation makes it due.
			continue
		}
		seen[key] = true
		c.countdownReadable(c.healthySince, key, nhc, r.obj.GetKind())
		if since, late := c.cleanupOverdue(c.healthySince, key, nhc, calm, delay+deletionBound); late {
			c.fail(InvDeletedWhenHealthy, "%s of NodeHealthCheck %s still exists, its node %s healthy since %s (healthyDelay %s): %s",
				describe(r.obj), nhc.Name, r.node, since.Format("15:04:05"), delay, conditionsOf(node))
		}
	}
	forgetUnseen(c.healthySince, seen)
}

// countdownReadable moves the instant a deletion became due (a node's
// recovery, an orphan's deselection) to the instant its NodeHealthCheck,
// and the kind of its resource, could all be read again, if that is
// later: healthyDelay counts from the stamp the controller puts on the
// resource, and it stamps and deletes nothing while one of them is
// forbidden (the NodeHealthCheck stays disabled, whole, meanwhile). A
// NodeHealthCheck also reads them all again when it stops reading the one
// that could not be read (lastReadUnreadable): its spec edited to drop the
// kind's template, or its status no longer listing its resources.
func (c *Checker) countdownReadable(dueSince map[runKey]time.Time, key runKey, nhc *v1alpha1.NodeHealthCheck, kind string) {
	since, ok := dueSince[key]
	if !ok {
		return
	}
	again := c.readableSince(append(c.kindsRead(nhc), cluster.KindOfRemediation(kind)))
	if stopped := c.lastReadUnreadable(nhc, since); stopped.After(again) {
		again = stopped
	}
	if again.After(since) {
		dueSince[key] = again
	}
}

// lastReadUnreadable is the last instant after from at which a version of
// a NodeHealthCheck (its UID), as its spec and status were then, read a
// kind that could not be read then (kindsRead, noteReadable); zero if none
// did.
func (c *Checker) lastReadUnreadable(nhc *v1alpha1.NodeHealthCheck, from time.Time) time.Time {
	versions := c.nhcs[nhc.Name]
	end := time.Now()
	for i := len(versions) - 1; i >= 0 && end.After(from); i-- {
		v := versions[i]
		if v.obj == nil {
			break
		}
		then := typedOf[v1alpha1.NodeHealthCheck](c, v.obj)
		if then.UID != nhc.UID {
			break
		}
		var last time.Time
		for _, k := range c.kindsRead(then) {
			for _, s := range c.unreadable[k] {
				to := end
				if !s.to.IsZero() && s.to.Before(to) {
					to = s.to
				}
				if s.from.Before(to) && v.at.Before(to) && to.After(last) {
					last = to
				}
			}
		}
		if !last.IsZero() {
			return last
		}
		end = v.at
	}
	return time.Time{}
}

// readableSince is when the last of the kinds became readable again (zero
// if none was forbidden): a NodeHealthCheck that reads them acts on none of
// its nodes before.
func (c *Checker) readableSince(kinds []cluster.Kind) time.Time {
	var since time.Time
	for _, k := range kinds {
		if again := c.readableAgain[k]; again.After(since) {
			since = again
		}
	}
	return since
}

// leaseReleases checks that a node lease of ours is released (deleted)
// within deletionBound once its NodeHealthCheck has no resource of the node
// and the node is not unhealthy by its conditions, or not selected, or is
// another NodeHealthCheck's to remediate (remediatorOf): that one must not
// wait for the lease to end. A deleted NodeHealthCheck's lease is released
// once no remediation resource is on the node: nothing else would, and
// every other NodeHealthCheck would wait for it to run out.
func (c *Checker) leaseReleases(calm bool) {
	now := time.Now()
	seen := map[runKey]bool{}
	for _, obj := range c.store.Stored(cluster.Leases) {
		node, lease := leaseOf(obj)
		name, ours := health.LeaseHolderNHC(lease.Holder)
		if !ours || node == "" {
			continue
		}
		key := runKey{nhc: name, node: node}
		nhc := c.nhcAt(name, now)
		why := "is deleted, and no remediation is on the node"
		switch {
		case nhc == nil:
			if c.resourceOn(node, now, nil) != nil {
				continue
			}
		case nhc.DeletionTimestamp != nil || c.hasResourceOf(nhc, node, now):
			continue
		default:
			why = "has no remediation of the node and does not remediate it"
			if n := c.nodeAt(node, now); n != nil && selects(nhc, n) {
				if _, matching := conditionsHold(nhc, n, now); matching && c.remediatorOf(n).Name == nhc.Name {
					continue
				}
			}
		}
		seen[key] = true
		if since, late := c.overdue(c.releaseSince, key, nhc, calm, deletionBound); late {
			c.fail(InvLeaseReleased, "node lease of %s held by %s since %s, though NodeHealthCheck %s %s",
				node, lease.Holder, since.Format("15:04:05"), name, why)
		}
	}
	forgetUnseen(c.releaseSince, seen)
}

// nhcCreated drops the lease-release timers under a new NodeHealthCheck's
// name: the lease holder names no UID, and one deleted under the same name
// left its own timers, which the new object must not inherit.
func (c *Checker) nhcCreated(name string) {
	for key := range c.releaseSince {
		if key.nhc == name {
			delete(c.releaseSince, key)
		}
	}
}

// overdue records in dueSince when something first became due for a key,
// and tells whether it is late: due for bound since the later of then and
// the calm's start, while the cluster is calm and the NodeHealthCheck can
// act (its kinds readable, not disabled); nhc is nil for a deleted one.
func (c *Checker) overdue(dueSince map[runKey]time.Time, key runKey, nhc *v1alpha1.NodeHealthCheck, calm bool, bound time.Duration) (since time.Time, late bool) {
	disabled := nhc != nil && meta.IsStatusConditionTrue(nhc.Status.Conditions, v1alpha1.ConditionDisabled)
	return c.cleanupOverdue(dueSince, key, nhc, calm && !disabled, bound)
}

// cleanupOverdue is overdue for what a disabled NodeHealthCheck does all
// the same: deleting its resources.
func (c *Checker) cleanupOverdue(dueSince map[runKey]time.Time, key runKey, nhc *v1alpha1.NodeHealthCheck, calm bool, bound time.Duration) (since time.Time, late bool) {
	now := time.Now()
	since, ok := dueSince[key]
	if !ok {
		since = now
		dueSince[key] = now
	}
	if !calm || c.unreadableLately(nhc, now) {
		return since, false
	}
	start := since
	if c.calmSince.After(start) {
		start = c.calmSince
	}
	c.recheckAt(start.Add(bound))
	return since, !now.Before(start.Add(bound))
}

// forgetUnseen drops what was due for the keys this check did not see.
func forgetUnseen[V any](dueSince map[runKey]V, seen map[runKey]bool) {
	for key := range dueSince {
		if !seen[key] {
			delete(dueSince, key)
		}
	}
}
