package check

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The invariants checked at every wake-up: nodes remediated in time, and
// statuses that show the cluster (the leases: leases.go).

// Check checks the invariants that time can break: the simulation calls it
// at every wake-up.
func (c *Checker) Check() {
	c.checks++
	c.recheck = time.Time{}
	all := c.resources()
	c.trackRuns(all)
	calm := c.cfg.Calm()
	c.noteCalm(calm, time.Now())
	c.blind = noteSpan(c.blind, c.watchLag() < 0, time.Now())
	c.noteReadable(time.Now())
	if !calm {
		// A watch delay ends with nothing delivered when it held nothing
		// back: the calm returns then.
		c.recheckAt(c.server.Watches().DelayUntil)
		c.calmSince = time.Time{}
	} else if c.calmSince.IsZero() {
		c.calmSince = time.Now()
	}
	c.liveness(all, calm)
	c.recoveries(all, calm)
	c.orphans(all, calm)
	c.leaseReleases(calm)
	c.escalations(all, calm)
	c.statuses(all)
}

// NextDue is when a liveness deadline or a lease verdict falls due, or a
// judgement of the last check may change (recheckAt): the simulation wakes
// then to check.
func (c *Checker) NextDue() time.Time {
	due := []time.Time{c.recheck}
	for _, u := range c.unanswered {
		due = append(due, u.call.Arrived.Add(unsettledHold))
	}
	for _, w := range c.leaseWrites {
		due = append(due, w.at.Add(leaseLag))
	}
	return cluster.Earliest(due...)
}

// liveness checks that a node that needs a remediation, and that nothing
// documented holds back, gets its resource within livenessBound.
func (c *Checker) liveness(all []remediationObj, calm bool) {
	now := time.Now()
	for _, node := range c.allNodes() {
		by := c.canRemediate(node, all)
		if !calm || by == "" {
			delete(c.unhealthySince, node.Name)
			continue
		}
		since, ok := c.unhealthySince[node.Name]
		if !ok {
			c.unhealthySince[node.Name] = now
			bound, _ := c.livenessBoundOf(node, by, now)
			c.recheckAt(now.Add(bound))
			continue
		}
		bound, invariant := c.livenessBoundOf(node, by, since)
		c.recheckAt(since.Add(bound))
		if !now.Before(since.Add(bound)) {
			c.fail(invariant, "node %s has needed a remediation by NodeHealthCheck %s since %s, with nothing in the way, and has none", node.Name, by, since.Format("15:04:05"))
		}
	}
}

// canRemediate names the NodeHealthCheck that should remediate a node now
// and may, or "": the node has no resource, is not excluded, no one else
// holds its lease, no other control-plane node is remediated, and the
// NodeHealthCheck is the one the overlap rule gives the node
// (remediatorOf), no create that a fault answered holds it
// (heldByUnanswered), no remediator's webhook refuses its resources
// (refused), its condition has held for its duration, it is not
// paused, its templates can be read and written, it starts no escalation,
// its budget allows, and its status has room (statusFull). A node whose
// remediator is held back (its budget, its duration not yet passed) waits
// for it: no other NodeHealthCheck that selects it takes it over.
func (c *Checker) canRemediate(node *corev1.Node, all []remediationObj) string {
	if excluded(node) || slices.ContainsFunc(all, func(r remediationObj) bool { return r.node == node.Name }) {
		return ""
	}
	if lease := c.leaseOn(node.Name); lease.HeldAt(time.Now()) {
		c.recheckAt(lease.Expires())
		return ""
	}
	// A resource remediates a control-plane node when it was created for
	// one, or its node is one now (the controller's own nodes count by
	// their role now).
	if v1alpha1.IsControlPlane(labels.Set(node.Labels)) && slices.ContainsFunc(all, func(r remediationObj) bool { return r.controlPlane || c.isControlPlaneNode(r.node) }) {
		return ""
	}
	if c.recordedUnreadable(node) || c.heldWhileForbidden(node) || c.heldByUnanswered(node) || c.refused(node.Name) {
		return ""
	}
	if nhc := c.remediatorOf(node); nhc != nil && c.mayRemediate(nhc, node) {
		return nhc.Name
	}
	return ""
}

// KindForbidden hears that the controller's role lost a kind (on) or got it
// back. It records, when a kind turns forbidden, the nodes its resources
// remediate then, those of its creates whose answer was lost (a create
// lost while the kind is forbidden is added then), and those of deletes
// the leader's informer has not shown: the controller, which can no longer read the kind, holds
// them until it can (decisions.md, "What cannot be read holds its nodes"),
// whether or not the resources are deleted meanwhile.
func (c *Checker) KindForbidden(k cluster.Kind, on bool) {
	if !on {
		if _, was := c.forbiddenNodes[k]; was {
			c.readableAgain[k] = time.Now()
		}
		delete(c.forbiddenNodes, k)
		delete(c.forbiddenSince, k)
		delete(c.uncertain, k)
		return
	}
	if _, already := c.forbiddenNodes[k]; already {
		return
	}
	c.forbiddenSince[k] = time.Now()
	nodes := map[string]bool{}
	for _, obj := range c.store.Objects(k.Remediation()) {
		if r := resourceOf(obj); r.owner != "" {
			nodes[r.node] = nodes[r.node] || r.controlPlane
		}
	}
	for _, r := range c.uncertain[k] {
		nodes[r.node] = nodes[r.node] || r.controlPlane
	}
	for _, r := range c.deletesUnseenByLeader(k) {
		if r.owner != "" {
			nodes[r.node] = nodes[r.node] || r.controlPlane
		}
	}
	c.forbiddenNodes[k] = nodes
}

// heldWhileForbidden tells whether a node had a resource of a kind when it
// turned forbidden, or a create of one whose answer was lost, or one the
// leader's informer has not shown, or, for a control-plane node, another
// node had one that was created for a control-plane node or remediates
// one now (a create refused as forbidden whose answer was lost holds its
// node and every control-plane node), and the kind is still forbidden and
// served.
func (c *Checker) heldWhileForbidden(node *corev1.Node) bool {
	controlPlane := v1alpha1.IsControlPlane(labels.Set(node.Labels))
	for k, nodes := range c.forbiddenNodes {
		if !c.store.Served(k.Remediation()) {
			continue
		}
		for held, createdForControlPlane := range nodes {
			if held == node.Name || controlPlane && (createdForControlPlane || c.isControlPlaneNode(held)) {
				return true
			}
		}
		for _, r := range c.unseenByLeader(k) {
			if r.node == node.Name || controlPlane && (r.controlPlane || c.isControlPlaneNode(r.node)) {
				return true
			}
		}
	}
	return false
}

// recordedUnreadable tells whether a NodeHealthCheck's status records a
// remediation of a node, or of another control-plane node when it is one,
// of a kind the controller may not read, and that is still served: the
// controller cannot tell whether it still exists, and holds the node
// (decisions.md, "What cannot be read holds its nodes").
func (c *Checker) recordedUnreadable(node *corev1.Node) bool {
	cp := v1alpha1.IsControlPlane(labels.Set(node.Labels))
	for _, nhc := range c.allNHCs() {
		for _, entry := range nhc.Status.UnhealthyNodes {
			// A recorded node that is gone counts as a control-plane one:
			// the status does not say what it was.
			if entry == nil || entry.Name != node.Name && !(cp && (c.isControlPlaneNode(entry.Name) || c.nodeAt(entry.Name, time.Now()) == nil)) {
				continue
			}
			for _, rem := range entryRemediations(entry) {
				k := cluster.KindOfRemediation(rem.Resource.Kind)
				if c.server.Forbidden(k.Remediation()) && c.store.Served(k.Remediation()) {
					return true
				}
			}
		}
	}
	return false
}

// unsettledHold is how long the controller holds a create whose result it
// could not settle: a fault answered it, and the GET that looks it up
// failed too. Its ledger keeps the create, which holds its node and, for a
// control-plane node, the one control-plane slot, until it lapses and is
// looked up again (pkg/remediation's inFlightTTL; docs/remediation.md,
// "Never twice, never lost").
const unsettledHold = time.Minute

// heldByUnanswered tells whether a create of the leading replica that a
// fault answered (unanswered), within unsettledHold, holds a node: its own,
// and, created for a control-plane node or on one now, every control-plane
// node. The checker does not follow the look-up, which may have settled it
// at once: it expects less, never more.
func (c *Checker) heldByUnanswered(node *corev1.Node) bool {
	now := time.Now()
	c.unanswered = slices.DeleteFunc(c.unanswered, func(u unansweredCreate) bool { return !now.Before(u.call.Arrived.Add(unsettledHold)) })
	controlPlane := v1alpha1.IsControlPlane(labels.Set(node.Labels))
	leader := c.cfg.Leader()
	for _, u := range c.unanswered {
		if leader != "" && u.call.Client == leader && (u.node == node.Name || controlPlane && (u.controlPlane || c.isControlPlaneNode(u.node))) {
			return true
		}
	}
	return false
}

// keptByOther tells whether another NodeHealthCheck has a remediation
// resource for a node: that one remediates the node until its resources
// are gone (docs/remediation.md, "Overlapping NodeHealthChecks", rule 1;
// two with resources break one-nodehealthcheck-per-node), and the others
// leave the node alone, their next steps included.
func keptByOther(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node, all []remediationObj) bool {
	return slices.ContainsFunc(all, func(r remediationObj) bool { return r.node == node.Name && r.owner != "" && r.owner != nhc.UID })
}

// stepUnderWay tells whether a NodeHealthCheck's status records a step
// under way for a node: one not timed out, with no recovery marked since.
func stepUnderWay(nhc *v1alpha1.NodeHealthCheck, node string) bool {
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry == nil || entry.Name != node || entry.ConditionsHealthyTimestamp != nil {
			continue
		}
		if slices.ContainsFunc(entryRemediations(entry), func(rem *v1alpha1.Remediation) bool { return rem.TimedOut == nil }) {
			return true
		}
	}
	return false
}

func (c *Checker) isControlPlaneNode(name string) bool {
	node := c.nodeAt(name, time.Now())
	return node != nil && v1alpha1.IsControlPlane(labels.Set(node.Labels))
}

// remediatorOf is the NodeHealthCheck that remediates a node without
// resources, by the overlap rule of decisions.md ("Overlapping
// NodeHealthChecks"), read from the objects at the API server: of those
// that select it, one that can act (not being deleted, not Disabled in its
// status, not paused) and whose status records a step under way for the
// node (not timed out, no recovery marked since: its resource is gone, to
// be created again), then one that can act before one that cannot, then
// one whose unhealthy conditions match the node (duration passed or not),
// then the oldest, then the first by name. The others leave the node to
// it, whatever holds it back; nil when none selects the node.
func (c *Checker) remediatorOf(node *corev1.Node) *v1alpha1.NodeHealthCheck {
	type claim struct {
		nhc                        *v1alpha1.NodeHealthCheck
		underWay, canAct, matching bool
	}
	first := func(a, b claim) bool {
		switch {
		case a.underWay != b.underWay:
			return a.underWay
		case a.canAct != b.canAct:
			return a.canAct
		case a.matching != b.matching:
			return a.matching
		case !a.nhc.CreationTimestamp.Equal(&b.nhc.CreationTimestamp):
			return a.nhc.CreationTimestamp.Before(&b.nhc.CreationTimestamp)
		}
		return a.nhc.Name < b.nhc.Name
	}
	var best *claim
	for _, nhc := range c.allNHCs() {
		if !selects(nhc, node) {
			continue
		}
		_, matching := conditionsHold(nhc, node, time.Now())
		cl := claim{nhc: nhc, matching: matching, canAct: nhc.DeletionTimestamp == nil && len(nhc.Spec.PauseRequests) == 0 &&
			!meta.IsStatusConditionTrue(nhc.Status.Conditions, v1alpha1.ConditionDisabled)}
		cl.underWay = cl.canAct && stepUnderWay(nhc, node.Name)
		if best == nil || first(cl, *best) {
			best = &cl
		}
	}
	if best == nil {
		return nil
	}
	return best.nhc
}

func (c *Checker) mayRemediate(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node) bool {
	if nhc.DeletionTimestamp != nil || len(nhc.Spec.PauseRequests) > 0 || !selects(nhc, node) || !c.unhealthyLongEnough(nhc, node) {
		return false
	}
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && entry.Name == node.Name && len(entry.Remediations) > 0 {
			return false
		}
	}
	if !c.templatesReady(nhc) {
		return false
	}
	st := c.store
	// The kinds its status lists must be read too: a NodeHealthCheck that
	// cannot see its own resources is disabled (decisions.md). So must
	// those of its creates that cannot be looked up: it watches them until
	// it sees them, a create whose answer was lost or that its stalled
	// watch never showed included.
	for _, entry := range nhc.Status.UnhealthyNodes {
		for _, rem := range entryRemediations(entry) {
			k := cluster.KindOfRemediation(rem.Resource.Kind)
			if c.server.Forbidden(k.Remediation()) && st.Served(k.Remediation()) {
				return false
			}
		}
	}
	for _, k := range cluster.Kinds {
		if c.server.Forbidden(k.Remediation()) && st.Served(k.Remediation()) && sentBy(c.unlookable(k), nhc) {
			return false
		}
	}
	if c.stormMayHold(nhc) || c.statusFull(nhc, node.Name) {
		return false
	}
	return c.budgetAllowsLately(nhc)
}
