package check

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Storm recovery from the cluster alone, as the spec defines it, never
// from the status the controller writes: the selected nodes' health and
// remediation resources, the budget and the storm fields of the spec at
// each instant.
//
// With stormRecoveryThreshold T, storm mode "is triggered by number of
// remediation reaching minHealthy/maxUnhealthy maximum"
// (nodehealthcheck-resource.md, stormRecoveryThreshold; "Storm hits: 11
// healthy, 9 unhealthy → 9 remediations created (minHealthy limit
// reached)"): it starts when the selected nodes with a remediation
// resource of the NodeHealthCheck are at least one and at least
// observed - minHealthy, the most the budget allows, and unhealthy > T; and
// holds until unhealthy <= T ("Exit storm recovery when (unhealthyNodes ≤
// stormRecoveryThreshold)"). A node whose condition has not held for its
// duration is no remediation. With only stormCooldownDuration, upstream's
// rules apply (docs/decisions.md): it starts when healthy < minHealthy
// and holds until healthy >= minHealthy. Neither starts while the
// NodeHealthCheck is paused ("no new remediation will be started"). A
// cooldown makes the end condition hold that long before the storm ends;
// it starts again when the condition breaks. A healthy node matches no
// unhealthy condition and has no remediation resource of the
// NodeHealthCheck.
//
// The controller sees the cluster at its syncs, a picture up to
// pictureLag old, so the checker tells two things apart: when storm
// recovery certainly holds (a create then breaks the rule), and when it
// may (no remediation is owed then). While its watches are not current
// (blind), its picture may keep a remediation resource gone since beside
// one created after: a start the cluster never had at one instant, which
// the spec's end condition alone ends (blindStart).

// stormPoint is a NodeHealthCheck's storm conditions from an instant on,
// recorded at every change that wakes it: one of its selected nodes, its
// spec, or one of its resources changed.
type stormPoint struct {
	at time.Time
	// starts and ends tell whether the start and the end condition hold;
	// with no storm configured, ends holds.
	starts, ends bool
	// blindStart tells whether the controller, its watches not current
	// (blind), may have seen the start condition hold though the cluster
	// never had it at one instant: its picture may still show a
	// remediation resource gone since it went blind beside one created
	// after (stormPointAt).
	blindStart bool
	cooldown   time.Duration
}

// stormHistory is a NodeHealthCheck's storm points, since it was created.
type stormHistory struct {
	uid    types.UID
	points []stormPoint
}

// stormStartLag is how long after its start condition begins to hold, in
// calm, the controller has certainly started storm recovery: the sync
// the change wakes may first create what the budget still allows in two
// batches (the guard's first create waits for its status), and the storm
// starts after the last.
const stormStartLag = 2 * pictureLag

// noteStorm records a NodeHealthCheck's storm conditions now, after a
// change that wakes it.
func (c *Checker) noteStorm(name string) {
	now := time.Now()
	nhc := c.nhcAt(name, now)
	if nhc == nil {
		delete(c.storms, name)
		return
	}
	h := c.storms[name]
	if h == nil || h.uid != nhc.UID {
		h = &stormHistory{uid: nhc.UID}
		c.storms[name] = h
	}
	h.points = append(h.points, c.stormPointAt(nhc, now))
}

// nodeChanged records the storm conditions of the NodeHealthChecks that
// select a node before or after a change the controller is woken by: its
// conditions, labels or annotations changed, or it came or went (a
// heartbeat alone wakes nothing).
func (c *Checker) nodeChanged(typ watch.EventType, changed, old *unstructured.Unstructured) {
	if typ == watch.Modified && old != nil && !nodeDiffers(typedOf[corev1.Node](c, old), typedOf[corev1.Node](c, changed)) {
		return
	}
	nodes := []*corev1.Node{typedOf[corev1.Node](c, changed)}
	if old != nil {
		nodes = append(nodes, typedOf[corev1.Node](c, old))
	}
	for _, nhc := range c.allNHCs() {
		if slices.ContainsFunc(nodes, func(n *corev1.Node) bool { return selects(nhc, n) }) {
			c.noteStorm(nhc.Name)
		}
	}
}

// nodeDiffers tells whether a node changed beyond its heartbeats.
func nodeDiffers(a, b *corev1.Node) bool {
	if !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return true
	}
	for i, ac := range a.Status.Conditions {
		bc := b.Status.Conditions[i]
		if ac.Type != bc.Type || ac.Status != bc.Status || !ac.LastTransitionTime.Equal(&bc.LastTransitionTime) {
			return true
		}
	}
	return false
}

// resourceChanged records the storm conditions of a remediation
// resource's NodeHealthCheck when it comes or goes.
func (c *Checker) resourceChanged(r remediationObj) {
	if nhc := c.nhcAt(r.ownerName, time.Now()); nhc != nil && nhc.UID == r.owner {
		c.noteStorm(nhc.Name)
	}
}

// stormPointAt is a NodeHealthCheck's storm conditions at t.
func (c *Checker) stormPointAt(nhc *v1alpha1.NodeHealthCheck, t time.Time) stormPoint {
	p := stormPoint{at: t, ends: true}
	threshold := nhc.Spec.StormRecoveryThreshold
	if nhc.Spec.StormCooldownDuration != nil {
		p.cooldown = nhc.Spec.StormCooldownDuration.Duration
	}
	if threshold == nil && p.cooldown <= 0 {
		return p
	}
	// A disabled NodeHealthCheck starts no storm, as upstream, which
	// evaluates none then.
	if len(nhc.Spec.PauseRequests) > 0 || meta.IsStatusConditionTrue(nhc.Status.Conditions, v1alpha1.ConditionDisabled) {
		p.ends = c.stormConditions(nhc, t, t).ends
		return p
	}
	at := c.stormConditions(nhc, t, t)
	p.starts, p.ends = at.starts, at.ends
	if from, blind := c.blindSince(t); blind && !p.starts {
		p.blindStart = c.stormConditions(nhc, from.Add(-pictureLag), t).starts
	}
	return p
}

// stormConditions tells whether the storm's start and end conditions
// held at t for a NodeHealthCheck, counting as remediated a node that had
// a resource of it at any instant from resourcesFrom to t.
func (c *Checker) stormConditions(nhc *v1alpha1.NodeHealthCheck, resourcesFrom, t time.Time) (p stormPoint) {
	observed, healthy, remediated := c.countsAt(nhc, resourcesFrom, t)
	unhealthy, minHealthy := observed-healthy, minHealthyOf(nhc, observed)
	if threshold := nhc.Spec.StormRecoveryThreshold; threshold != nil {
		p.starts = remediated > 0 && remediated >= observed-minHealthy && unhealthy > int(*threshold)
		p.ends = unhealthy <= int(*threshold)
	} else {
		p.starts = unhealthy > 0 && healthy < minHealthy
		p.ends = healthy >= minHealthy
	}
	return p
}

// countsAt counts a NodeHealthCheck's selected nodes at t, the healthy
// ones among them, and those with a remediation resource of it at any
// instant from resourcesFrom to t.
func (c *Checker) countsAt(nhc *v1alpha1.NodeHealthCheck, resourcesFrom, t time.Time) (observed, healthy, remediated int) {
	for name := range c.nodes {
		node := c.nodeAt(name, t)
		if node == nil || !selects(nhc, node) {
			continue
		}
		observed++
		_, matching := conditionsHold(nhc, node, t)
		switch resource := c.hadResourceOf(nhc, name, resourcesFrom, t); {
		case resource:
			remediated++
		case !matching:
			healthy++
		}
	}
	return observed, healthy, remediated
}

// blindSince is when the controller's watches stopped being current, if
// they are not at t (a span of c.blind open then).
func (c *Checker) blindSince(t time.Time) (time.Time, bool) {
	for _, s := range c.blind {
		if !s.from.After(t) && (s.to.IsZero() || s.to.After(t)) {
			return s.from, true
		}
	}
	return time.Time{}, false
}

// stormHeld tells whether storm recovery certainly held for a
// NodeHealthCheck all along pictureLag before t, and since when: it
// started for certain (stormStarted), and nothing the controller may have
// seen since could have ended it (stormMayEnd).
func (c *Checker) stormHeld(nhc *v1alpha1.NodeHealthCheck, t time.Time) (time.Time, bool) {
	h := c.storms[nhc.Name]
	if h == nil || h.uid != nhc.UID {
		return time.Time{}, false
	}
	points := h.points
	for len(points) > 0 && points[len(points)-1].at.After(t) {
		points = points[:len(points)-1]
	}
	for i := 0; i < len(points); i++ {
		since, ok := c.stormStarted(nhc, points, i)
		if !ok {
			continue
		}
		end, ended := c.stormMayEnd(points[i:], t)
		if !since.After(t.Add(-pictureLag)) && (!ended || end.After(t)) {
			return since, true
		}
		if ended {
			// Start again after the possible end.
			for i+1 < len(points) && points[i+1].at.Before(end) {
				i++
			}
		}
	}
	return time.Time{}, false
}

// stormStarted tells whether the change at points[i] certainly started
// storm recovery, and when it had: the start condition held from it for
// stormStartLag, in calm, with every kind the NodeHealthCheck reads
// readable, so that the sync it woke saw it.
func (c *Checker) stormStarted(nhc *v1alpha1.NodeHealthCheck, points []stormPoint, i int) (time.Time, bool) {
	from := points[i].at
	since := from.Add(stormStartLag)
	for _, p := range points[i:] {
		if p.at.After(since) {
			break
		}
		if !p.starts {
			return time.Time{}, false
		}
	}
	return since, c.freshOver(from, since) && c.readableOver(c.kindsReadOver(nhc, from, since), from, since)
}

// stormMayEnd is the first instant at which the controller may have ended
// a storm running at points[0], and whether one comes before until: the
// end condition held from an instant for its cooldown, or may have seemed
// to (a break it may not have seen, breakSeen), and was seen no later
// than pictureLag after it broke; or the controller's watches stopped
// being current (blindFrom): its picture then may join nodes from before
// to remediation resources from after, as when a node relapsed while the
// node watch stalled, the controller deleted its resource as healthy and
// counted it healthy, an end the cluster never had.
func (c *Checker) stormMayEnd(points []stormPoint, until time.Time) (time.Time, bool) {
	end, ended := c.stormEndHeld(points, until)
	if len(points) > 0 {
		if blind, ok := c.blindFrom(points[0].at, until); ok && (!ended || blind.Before(end)) {
			return blind, true
		}
	}
	return end, ended
}

// stormEndHeld is the first instant at which the controller may have
// ended a storm running at points[0] from the end condition the cluster
// had, and whether one comes before until (stormMayEnd).
func (c *Checker) stormEndHeld(points []stormPoint, until time.Time) (time.Time, bool) {
	var from, broke time.Time
	open, merged := false, false
	cooldown := time.Duration(0)
	for _, p := range points {
		if p.at.After(until) {
			break
		}
		switch {
		case p.ends && !open:
			open = true
			if !merged || c.breakSeen(broke, p.at) {
				from, cooldown = p.at, p.cooldown
			}
			cooldown = min(cooldown, p.cooldown)
			if end := cooledAt(from, cooldown); !end.After(p.at) {
				return end, true
			}
		case p.ends:
			cooldown = min(cooldown, p.cooldown)
		case open:
			open, merged, broke = false, true, p.at
			if end := cooledAt(from, cooldown); !end.After(p.at.Add(pictureLag)) {
				return end, true
			}
		}
	}
	if open || merged && !c.breakSeen(broke, until) {
		return cooledAt(from, cooldown), true
	}
	return time.Time{}, false
}

// cooledAt is the earliest instant at which the controller may end a
// cooldown that started at from: it records the start in whole seconds
// (a condition's lastTransitionTime), so it may end up to timestampGrain
// early.
func cooledAt(from time.Time, cooldown time.Duration) time.Time {
	if cooldown <= 0 {
		return from
	}
	return from.Add(cooldown - timestampGrain)
}

// breakSeen tells whether the controller certainly saw the end condition
// break at an instant, before it held again: the break lasted
// pictureLag, and the cluster was calm and the watches current meanwhile,
// so that the sync the change woke saw it.
func (c *Checker) breakSeen(broke, again time.Time) bool {
	return !again.Before(broke.Add(pictureLag)) && c.freshOver(broke, broke.Add(pictureLag))
}

// stormMayHold tells whether storm recovery may hold for a NodeHealthCheck
// now, as the controller may see it: its start condition held at a
// change since it was created, and its end condition has not held since
// long enough for it to have certainly ended (stormEnded).
func (c *Checker) stormMayHold(nhc *v1alpha1.NodeHealthCheck) bool {
	h := c.storms[nhc.Name]
	if h == nil || h.uid != nhc.UID {
		return false
	}
	may, run := false, -1
	for i, p := range h.points {
		if run >= 0 && !p.ends {
			if _, ended := c.stormEnded(nhc, h.points[run:i], p.at); ended {
				may = false
			}
			run = -1
		}
		switch {
		case p.starts || p.blindStart:
			may = true
		case p.ends && run < 0:
			run = i
		}
	}
	if may && run >= 0 {
		now := time.Now()
		end, ended := c.stormEnded(nhc, h.points[run:], now)
		if !ended && !end.IsZero() {
			c.recheckAt(end)
		}
		may = !ended
	}
	return may
}

// stormEnded tells whether a run of changes at which the end condition
// held, until an instant, certainly ended storm recovery: one of them woke
// a sync in calm, with the NodeHealthCheck's kinds readable, which saw it
// within pictureLag, and the run lasted the longest cooldown it had beyond
// (the controller wakes when its cooldown ends). Else it is when the run
// will have, if it goes on as calm as until now, or zero.
func (c *Checker) stormEnded(nhc *v1alpha1.NodeHealthCheck, run []stormPoint, until time.Time) (time.Time, bool) {
	cooldown := time.Duration(0)
	for _, p := range run {
		cooldown = max(cooldown, p.cooldown)
	}
	for _, p := range run {
		end := p.at.Add(pictureLag + cooldown)
		if end.After(until) {
			if c.freshOver(p.at, until) && c.readableOver(c.kindsReadOver(nhc, p.at, until), p.at, until) {
				return end, false
			}
			continue
		}
		if c.freshOver(p.at, end) && c.readableOver(c.kindsReadOver(nhc, p.at, end), p.at, end) {
			return end, true
		}
	}
	return time.Time{}, false
}
