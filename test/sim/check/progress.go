package check

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

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
		c.countdownReadable(key, nhc, r.obj.GetKind())
		if since, late := c.cleanupOverdue(c.healthySince, key, nhc, calm, delay+deletionBound); late {
			c.fail(InvDeletedWhenHealthy, "%s of NodeHealthCheck %s still exists, its node %s healthy since %s (healthyDelay %s): %s",
				describe(r.obj), nhc.Name, r.node, since.Format("15:04:05"), delay, conditionsOf(node))
		}
	}
	forgetUnseen(c.healthySince, seen)
}

// countdownReadable moves the start of a node's recovery to the instant
// its NodeHealthCheck, and the kind of its resource, could all be read
// again, if that is later: healthyDelay counts from the stamp the
// controller puts on the resource, and it stamps nothing while one of them
// is forbidden (the NodeHealthCheck stays disabled, whole, meanwhile). A
// NodeHealthCheck also reads them all again when it stops reading the one
// that could not be read (lastReadUnreadable): its spec edited to drop the
// kind's template, or its status no longer listing its resources.
func (c *Checker) countdownReadable(key runKey, nhc *v1alpha1.NodeHealthCheck, kind string) {
	since, ok := c.healthySince[key]
	if !ok {
		return
	}
	again := c.readableSince(append(c.kindsRead(nhc), cluster.KindOfRemediation(kind)))
	if stopped := c.lastReadUnreadable(nhc, since); stopped.After(again) {
		again = stopped
	}
	if again.After(since) {
		c.healthySince[key] = again
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

// InvEscalated: a step with a timeout is followed by the next step, or, the
// last, is timed out on record, within timeout + escalationBound of its
// first start, or within escalationBound of its remediator reporting
// Succeeded=False (the spec's "EscalatingRemediations").
const InvEscalated = "escalation-on-time"

// escalationBound is how late after its timeout, with nothing in the way,
// a step may still run without its successor.
const escalationBound = 2 * time.Minute

// escalations checks every (NodeHealthCheck, node) whose node is unhealthy
// by its conditions: the step with a timeout that runs, first started in
// this incident at S, is followed within S + timeout + escalationBound (or
// escalationBound after it reported Succeeded=False, if sooner), or within
// escalationBound of the instant since which nothing is in the way,
// whichever is later.
func (c *Checker) escalations(all []remediationObj, calm bool) {
	now := time.Now()
	seen := map[runKey]bool{}
	remediated := map[runKey]bool{}
	for _, l := range c.lives {
		remediated[runKey{nhc: l.ownerName, node: l.node}] = true
	}
	for _, nhc := range c.allNHCs() {
		steps := nhc.Spec.RemediationSteps()
		for _, node := range c.allNodes() {
			key := runKey{nhc: nhc.Name, node: node.Name}
			if !remediated[key] {
				continue
			}
			i, started, failed := c.runningStep(nhc, node.Name, steps, now)
			if i < 0 || steps[i].Timeout.Duration <= 0 || !calm || !c.mayEscalate(nhc, node, all) {
				continue
			}
			seen[key] = true
			since, ok := c.escalateSince[key]
			if !ok {
				c.escalateSince[key] = now
				since = now
			}
			due := started.Add(steps[i].Timeout.Duration)
			if !failed.IsZero() && failed.Before(due) {
				due = failed
			}
			if since.After(due) {
				due = since
			}
			c.recheckAt(due.Add(escalationBound))
			if !now.Before(due.Add(escalationBound)) {
				c.fail(InvEscalated, "node %s of NodeHealthCheck %s still at step %d (%s, timeout %s) first started at %s, with nothing in the way since %s",
					node.Name, nhc.Name, i+1, steps[i].RemediationTemplate.Name, steps[i].Timeout.Duration, started.Format("15:04:05"), since.Format("15:04:05"))
			}
		}
	}
	forgetUnseen(c.escalateSince, seen)
}

// runningStep is the highest step of a NodeHealthCheck whose resource for
// a node was created in the node's incident (incidentStart), with its first
// start then and when a resource of it first reported Succeeded=False
// (zero if none did), unless that step is timed out on record or by its
// annotation (the last one) or a later step's resource followed it; -1
// otherwise. A spec edited since the step started asks nothing.
func (c *Checker) runningStep(nhc *v1alpha1.NodeHealthCheck, node string, steps []v1alpha1.EscalatingRemediation, now time.Time) (int, time.Time, time.Time) {
	incident := c.incidentStart(nhc, node, now)
	step, started, failed := -1, time.Time{}, time.Time{}
	for _, l := range c.lives {
		// A resource created at the instant an incident ended belongs to
		// that incident.
		if l.owner != nhc.UID || l.node != node || !l.created.After(incident) {
			continue
		}
		for i, s := range steps {
			if s.RemediationTemplate.Name != l.template || i < step {
				continue
			}
			if i > step {
				failed = time.Time{}
			}
			if i > step || l.created.Before(started) {
				step, started = i, l.created
			}
			if !l.failed.IsZero() && (failed.IsZero() || l.failed.Before(failed)) {
				failed = l.failed
			}
		}
	}
	if step < 0 {
		return -1, time.Time{}, time.Time{}
	}
	if then := c.nhcAt(nhc.Name, started); then == nil || then.Generation != nhc.Generation {
		return -1, time.Time{}, time.Time{}
	}
	if step == len(steps)-1 && (c.timedOutOnRecord(nhc, node, steps[step].RemediationTemplate.Name) || c.timedOutSeen(nhc, node, steps[step], incident)) {
		return -1, time.Time{}, time.Time{}
	}
	return step, started, failed
}

// timedOutSeen tells whether a resource of a step, created in a node's
// incident, was seen timed out: its annotation, which holds where the
// status's bound left the node's entry out (outgrown).
func (c *Checker) timedOutSeen(nhc *v1alpha1.NodeHealthCheck, node string, step v1alpha1.EscalatingRemediation, incident time.Time) bool {
	return slices.ContainsFunc(c.lives, func(l resourceLife) bool {
		return l.owner == nhc.UID && l.node == node && l.created.After(incident) && !l.timedOut.IsZero() &&
			stepIndex([]v1alpha1.EscalatingRemediation{step}, l.obj.GetKind(), l.template) == 0
	})
}

// incidentStart is the last instant before t at which a node was gone,
// not selected by a NodeHealthCheck as its spec was then (a relabelled
// node or an edited selector; the NodeHealthCheck deleted or created
// again), or matched none of its unhealthy conditions: each ends an
// incident, and the controller deletes the node's resources then. Every
// version counts, also one followed by another in the same instant: a
// recovery that lasted no time may still have been seen.
func (c *Checker) incidentStart(nhc *v1alpha1.NodeHealthCheck, name string, t time.Time) time.Time {
	var last time.Time
	ends := func(at time.Time, node *corev1.Node, then *v1alpha1.NodeHealthCheck) {
		if at.After(t) || !at.After(last) {
			return
		}
		if node == nil || then == nil || then.UID != nhc.UID {
			last = at
			return
		}
		if _, matching := conditionsHold(then, node, at); !matching || !selects(then, node) {
			last = at
		}
	}
	for _, v := range c.nodes[name] {
		var node *corev1.Node
		if v.obj != nil {
			node = typedOf[corev1.Node](c, v.obj)
		}
		ends(v.at, node, c.nhcAt(nhc.Name, v.at))
	}
	for _, v := range c.nhcs[nhc.Name] {
		var then *v1alpha1.NodeHealthCheck
		if v.obj != nil {
			then = typedOf[v1alpha1.NodeHealthCheck](c, v.obj)
		}
		ends(v.at, c.nodeAt(name, v.at), then)
	}
	return last
}

// timedOutOnRecord tells whether the status records a step of a node as
// timed out.
func (c *Checker) timedOutOnRecord(nhc *v1alpha1.NodeHealthCheck, node, template string) bool {
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry == nil || entry.Name != node {
			continue
		}
		for _, rem := range entryRemediations(entry) {
			if rem.TemplateName == template && rem.TimedOut != nil {
				return true
			}
		}
	}
	return false
}

// mayEscalate tells whether nothing documented holds back a node's next
// step: its NodeHealthCheck acts (not deleted or paused, its templates
// there and readable, no storm recovery that may hold,
// within its budget, its kinds readable), the node is selected, not
// excluded, unhealthy for its duration, no one else holds its lease, no
// other NodeHealthCheck has a resource for it (keptByOther), no create
// that a fault answered holds it (heldByUnanswered), and, for a
// control-plane node, no other control-plane node is remediated.
func (c *Checker) mayEscalate(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node, all []remediationObj) bool {
	now := time.Now()
	if nhc.DeletionTimestamp != nil || len(nhc.Spec.PauseRequests) > 0 || !selects(nhc, node) || excluded(node) ||
		!c.unhealthyLongEnough(nhc, node) || !c.templatesReady(nhc) ||
		c.unreadableLately(nhc, now) || c.recordedUnreadable(node) || c.heldWhileForbidden(node) || c.heldByUnanswered(node) || keptByOther(nhc, node, all) {
		return false
	}
	if c.stormMayHold(nhc) {
		return false
	}
	if lease := c.leaseOn(node.Name); lease.HeldAt(now) {
		if holder, ours := health.LeaseHolderNHC(lease.Holder); !ours || holder != nhc.Name {
			c.recheckAt(lease.Expires())
			return false
		}
	}
	if v1alpha1.IsControlPlane(labels.Set(node.Labels)) && slices.ContainsFunc(all, func(r remediationObj) bool {
		return r.node != node.Name && (r.controlPlane || c.isControlPlaneNode(r.node))
	}) {
		return false
	}
	return c.budgetAllowsLately(nhc)
}

// budgetAllows tells whether a NodeHealthCheck's budget allowed a new step
// at each instant, counted as the controller counts.
func (c *Checker) budgetAllows(nhc *v1alpha1.NodeHealthCheck, instants ...time.Time) bool {
	for _, t := range instants {
		if healthy, minHealthy := c.budgetAt(nhc, t); healthy < minHealthy {
			return false
		}
	}
	return true
}
