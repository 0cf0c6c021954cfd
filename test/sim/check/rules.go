package check

import (
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The rules of the spec that a create or a delete may break, read from the
// objects at the API server around the request (the create's own rules:
// invariants.go): no new remediation while its NodeHealthCheck is paused,
// for an excluded node, beyond the budget, during storm recovery, or while
// a template it references is missing; no remediation deleted while its
// node is still unhealthy (healthyDelay and orphans: cleanup.go).

// The invariants of this file, by name, each with the section of the
// spec it checks.
const (
	// InvPaused: no new remediation while pauseRequests are set (the
	// spec's "PauseRequests").
	InvPaused = "no-create-while-paused"
	// InvExcluded: no new remediation of a node labelled
	// remediation.medik8s.io/exclude-from-remediation=true
	// (docs/decisions.md, "Evaluation and timing": what blocks a new
	// remediation).
	InvExcluded = "no-create-for-excluded-node"
	// InvBudget: no new remediation while fewer selected nodes than
	// minHealthy are healthy (the spec's "Spec Details": minHealthy and
	// maxUnhealthy).
	InvBudget = "no-create-beyond-the-budget"
	// InvStorm: no new remediation while storm recovery holds, computed
	// from the cluster (storm.go; the spec's "Storm Recovery States").
	InvStorm = "no-create-during-storm-recovery"
	// InvKeptWhileUnwell: a node whose unhealthy condition changed to
	// another keeps its remediation (the spec's workflow, "Ignoring
	// unhealthy node condition duration in case node condition changes
	// during remediation").
	InvKeptWhileUnwell = "no-deletion-while-unhealthy"
	// InvRepeatedCreate: never two creates of one resource
	// (docs/remediation.md, "Never twice, never lost").
	InvRepeatedCreate = "no-create-sent-twice"
)

// pictureLag is how old the controller's picture of a NodeHealthCheck or a
// node may be when its request arrives: a state that has held as long
// before the request is one it knew. A request retried after a 429 or a
// 5xx arrives this much after its sync read.
const pictureLag = 5 * time.Second

// createRules checks a create answered 201 against the rules around it.
func (c *Checker) createRules(call *apiserver.Call, obj *unstructured.Unstructured, r remediationObj) {
	t, before := call.Arrived, call.Arrived.Add(-pictureLag)
	nhc, earlier := c.nhcAt(r.ownerName, t), c.nhcAt(r.ownerName, before)
	node, nodeBefore := c.nodeAt(r.node, t), c.nodeAt(r.node, before)
	if nhc == nil || node == nil {
		return
	}
	if earlier != nil && len(nhc.Spec.PauseRequests) > 0 && len(earlier.Spec.PauseRequests) > 0 {
		c.fail(InvPaused, "%s created for node %s while NodeHealthCheck %s was paused (%v)", describe(obj), r.node, nhc.Name, nhc.Spec.PauseRequests)
	}
	if nodeBefore != nil && excluded(node) && excluded(nodeBefore) {
		c.fail(InvExcluded, "%s created for node %s, labelled %s=true since before %s", describe(obj), r.node, v1alpha1.ExcludeFromRemediationLabel, before.Format("15:04:05"))
	}
	if c.calmThrough(before) && earlier != nil {
		if healthy, minHealthy := c.budgetAt(nhc, t, before); healthy < minHealthy {
			c.fail(InvBudget, "%s created for node %s with %d nodes of NodeHealthCheck %s healthy, fewer than its minimum %d", describe(obj), r.node, healthy, nhc.Name, minHealthy)
		}
	}
	if c.freshThrough(before) {
		if missing := c.missingTemplate(nhc, t); missing != "" {
			c.fail(InvTemplateMissing, "%s created for node %s while NodeHealthCheck %s's template %s was missing", describe(obj), r.node, nhc.Name, missing)
		}
	}
	if since, held := c.stormHeld(nhc, t); held {
		c.fail(InvStorm, "%s created for node %s during NodeHealthCheck %s's storm recovery, which has certainly held since %s", describe(obj), r.node, nhc.Name, since.Format("15:04:05"))
	}
}

// budgetAt is the most healthy nodes the controller can have counted for a
// NodeHealthCheck, at t or at before, and the least minimum it can have
// derived: a node healthy at either instant counts as healthy; the
// minimum comes from the fewest nodes observed at either.
func (c *Checker) budgetAt(nhc *v1alpha1.NodeHealthCheck, instants ...time.Time) (healthy, minHealthy int) {
	minHealthy = -1
	healthyNodes := map[string]bool{}
	for _, t := range instants {
		observed := 0
		for name := range c.nodes {
			node := c.nodeAt(name, t)
			if node == nil || !selects(nhc, node) {
				continue
			}
			observed++
			if _, matching := conditionsHold(nhc, node, t); !matching && !c.hasResourceOf(nhc, name, t) {
				healthyNodes[name] = true
			}
		}
		if m := minHealthyOf(nhc, observed); minHealthy < 0 || m < minHealthy {
			minHealthy = m
		}
	}
	return len(healthyNodes), minHealthy
}

// minHealthyOf is a NodeHealthCheck's minimum of healthy nodes among
// observed, as the spec defines it: a percentage rounds up, and
// maxUnhealthy leaves observed minus what it allows.
func minHealthyOf(nhc *v1alpha1.NodeHealthCheck, observed int) int {
	value, maxUnhealthy := nhc.Spec.MinHealthy, false
	if nhc.Spec.MaxUnhealthy != nil {
		value, maxUnhealthy = nhc.Spec.MaxUnhealthy, true
	}
	if value == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(value, observed, true)
	if err != nil {
		return 0
	}
	if maxUnhealthy {
		return max(observed-n, 0)
	}
	return n
}

// hasResourceOf tells whether a NodeHealthCheck had a resource of a node
// at an instant.
func (c *Checker) hasResourceOf(nhc *v1alpha1.NodeHealthCheck, node string, t time.Time) bool {
	return c.hadResourceOf(nhc, node, t, t)
}

// hadResourceOf tells whether a NodeHealthCheck had a resource of a node
// at any instant from one to another.
func (c *Checker) hadResourceOf(nhc *v1alpha1.NodeHealthCheck, node string, from, to time.Time) bool {
	for i := range c.lives {
		l := &c.lives[i]
		if l.node == node && l.owner == nhc.UID && !l.created.After(to) && (l.deleted.IsZero() || l.deleted.After(from)) {
			return true
		}
	}
	return false
}

// resourceOn finds a remediation resource that was on a node at an instant
// (created at or before it and not deleted since) and that of accepts (nil:
// any), or nil.
func (c *Checker) resourceOn(node string, t time.Time, of func(remediationObj) bool) *resourceLife {
	for i := range c.lives {
		l := &c.lives[i]
		if l.node == node && !l.created.After(t) && (l.deleted.IsZero() || l.deleted.After(t)) && (of == nil || of(l.remediationObj)) {
			return l
		}
	}
	return nil
}

// calmThrough tells whether calm has held since before t.
func (c *Checker) calmThrough(t time.Time) bool {
	return c.cfg.Calm() && !c.calmSince.IsZero() && !c.calmSince.After(t)
}

// freshThrough tells whether calm has held since before t, and the
// controller's watches have been current (watchLag): a watch that ended
// and waits out its back-off leaves the controller's picture of its kind
// as old as the outage.
func (c *Checker) freshThrough(t time.Time) bool {
	return c.calmThrough(t) && c.watchLag() >= 0 && !overlaps(c.blind, t, time.Now())
}

// freshOver tells whether the cluster was calm, and the controller's
// watches current, from one instant to another.
func (c *Checker) freshOver(from, to time.Time) bool {
	return c.calmOver(from, to) && !overlaps(c.blind, from, to)
}

// blindFrom is the first instant from one instant to another at which
// the controller's watches were not current, and whether there is one.
func (c *Checker) blindFrom(from, to time.Time) (time.Time, bool) {
	for _, s := range c.blind {
		if !s.from.After(to) && (s.to.IsZero() || !s.to.Before(from)) {
			if s.from.Before(from) {
				return from, true
			}
			return s.from, true
		}
	}
	return time.Time{}, false
}

// deleteRules checks a delete of a remediation resource the controller
// sent: its node must not have been unhealthy by its NodeHealthCheck's
// conditions all along pictureLag before, selected and present (the
// anti-loop rule: a node whose unhealthy condition changed keeps its
// remediation).
func (c *Checker) deleteRules(call *apiserver.Call, resp *http.Response) {
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return
	}
	life := c.lifeOf(call.Namespace, call.Name, call.Arrived)
	if life == nil || !c.calmThrough(call.Arrived.Add(-pictureLag)) {
		return
	}
	for _, t := range []time.Time{call.Arrived, call.Arrived.Add(-pictureLag)} {
		nhc, node := c.nhcAt(life.ownerName, call.Arrived), c.nodeAt(life.node, t)
		if nhc == nil || nhc.DeletionTimestamp != nil || node == nil || !selects(nhc, node) {
			return
		}
		if _, matching := conditionsHold(nhc, node, t); !matching {
			return
		}
	}
	node := c.nodeAt(life.node, call.Arrived)
	c.fail(InvKeptWhileUnwell, "%s/%s of node %s deleted while the node was unhealthy all along: %s", call.Namespace, call.Name, life.node, conditionsOf(node))
}

// resourceLife is when a remediation resource existed.
type resourceLife struct {
	remediationObj
	namespace, name  string
	created, deleted time.Time
	// failed is when it first reported Succeeded=False.
	failed time.Time
	// timedOut is when it was first seen timed out: with the timed-out
	// annotation, or on record in its NodeHealthCheck's status (a step
	// whose remediator reported Succeeded=True is not annotated).
	timedOut time.Time
	// deletedByController tells whether a delete the controller sent
	// landed on it, and deleteSent when the first did.
	deletedByController bool
	deleteSent          time.Time
}

// lifeOf finds the resource of a name that existed at t.
func (c *Checker) lifeOf(namespace, name string, t time.Time) *resourceLife {
	for i := range c.lives {
		l := &c.lives[i]
		if l.namespace == namespace && l.name == name && !l.created.After(t) && (l.deleted.IsZero() || !l.deleted.Before(t)) {
			return l
		}
	}
	return nil
}

// repeatedCreates checks the ledger's rule: a replica that was answered
// 201 for a create never sends it again while that resource exists (it is
// pending until its informer shows it, then seen). One whose answer was
// lost, or a new replica, may: it cannot know.
func (c *Checker) repeatedCreates(call *apiserver.Call, resp *http.Response) {
	key := call.Client + " " + call.GVR.String() + " " + call.Namespace + "/" + nameOf(call)
	switch resp.StatusCode {
	case http.StatusCreated:
		if obj, err := c.store.Get(call.GVR, call.Namespace, nameOf(call)); err == nil {
			c.answeredCreates[key] = string(obj.GetUID())
		}
	case http.StatusConflict:
		obj, err := c.store.Get(call.GVR, call.Namespace, nameOf(call))
		if uid, answered := c.answeredCreates[key]; answered && err == nil && string(obj.GetUID()) == uid {
			c.fail(InvRepeatedCreate, "%s sent again by %s, which was answered 201 for it at its first create", describe(obj), call.Client)
		}
	}
}

// deletedByController marks the resource a delete the controller sent
// landed on, its answer lost or not.
func (c *Checker) deletedByController(call *apiserver.Call, resp *http.Response) {
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return
	}
	k, ok := cluster.KindOf(call.GVR)
	if !ok {
		return
	}
	for i := range c.lives {
		l := &c.lives[i]
		if l.namespace == call.Namespace && l.name == call.Name && cluster.KindOfRemediation(l.obj.GetKind()) == k &&
			!l.created.After(call.Arrived) && (l.deleted.IsZero() || !l.deleted.Before(call.Arrived)) {
			if !l.deletedByController {
				l.deletedByController, l.deleteSent = true, call.Arrived
			}
		}
	}
}
