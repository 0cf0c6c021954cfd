package check

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Escalation on time: the next step follows a step's timeout, or its
// remediator's failure, when nothing holds it back.

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
			if i < 0 || steps[i].Timeout.Duration <= 0 || !calm || c.refused(node.Name) || !c.mayEscalate(nhc, node, all) {
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
