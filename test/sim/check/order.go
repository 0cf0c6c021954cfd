package check

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The order of escalation: a step comes after the one before it has had
// its time, never early (the spec: "The timeout field determines when the
// next remediation is invoked"), and a node that recovered starts again at
// the first step.

// InvNotEarly: an escalation step's resource is created only after the
// step before it ran in the node's incident, and no sooner than that
// step's timeout after its own first start, unless its remediator
// reported Succeeded=False (the spec's "EscalatingRemediations": "The
// `timeout` field determines when the next remediation is invoked",
// counted from the step's own invocation). Nothing else ends a step
// early: not its node lease, however long ago the lease was taken for
// the steps before it.
const InvNotEarly = "escalation-not-early"

// timestampGrain is how much earlier than its instant a creationTimestamp
// may say a resource was created: the field holds whole seconds.
const timestampGrain = time.Second

// span is an interval of time; a zero to is still open.
type span struct{ from, to time.Time }

// noteSpan opens a span when on turns true, and closes it when on turns
// false.
func noteSpan(spans []span, on bool, now time.Time) []span {
	last := len(spans) - 1
	open := last >= 0 && spans[last].to.IsZero()
	switch {
	case on && !open:
		spans = append(spans, span{from: now})
	case !on && open:
		spans[last].to = now
	}
	return spans
}

// overlaps tells whether one of the spans overlaps from..to.
func overlaps(spans []span, from, to time.Time) bool {
	for _, s := range spans {
		if !s.from.After(to) && (s.to.IsZero() || !s.to.Before(from)) {
			return true
		}
	}
	return false
}

// noteCalm records the spans the cluster was not calm.
func (c *Checker) noteCalm(calm bool, now time.Time) {
	c.unrest = noteSpan(c.unrest, !calm, now)
}

// calmOver tells whether the cluster was calm from one instant to another.
func (c *Checker) calmOver(from, to time.Time) bool {
	return !overlaps(c.unrest, from, to)
}

// kindLag is how long after a kind turns readable again the controller may
// still not read it: it tries a kind it could not read again every 15 s
// (upstream's requeue for a template problem).
const kindLag = 15 * time.Second

// noteReadable records the spans each kind was unreadable: forbidden to
// the controller's role, or its resource or template not served.
func (c *Checker) noteReadable(now time.Time) {
	for _, k := range cluster.Kinds {
		off := c.server.Forbidden(k.Remediation()) || !c.store.Served(k.Remediation()) || !c.store.Served(k.Template())
		c.unreadable[k] = noteSpan(c.unreadable[k], off, now)
	}
}

// readableOver tells whether the controller could read every one of the
// kinds from one instant to another, kindLag after each turned readable
// again.
func (c *Checker) readableOver(kinds []cluster.Kind, from, to time.Time) bool {
	for _, k := range kinds {
		if overlaps(c.unreadable[k], from.Add(-kindLag), to) {
			return false
		}
	}
	return true
}

// stepOrder checks a new remediation resource against the step before its
// own in its NodeHealthCheck's escalation.
func (c *Checker) stepOrder(obj *unstructured.Unstructured, r remediationObj) {
	now := time.Now()
	nhc, steps, i := c.stepOfNew(obj, r, now)
	if i <= 0 {
		return
	}
	incident := c.recognisedIncidentStart(nhc, r.node, now)
	if then := c.nhcAt(nhc.Name, incident); then == nil || then.UID != nhc.UID || !apiequality.Semantic.DeepEqual(then.Spec.RemediationSteps(), steps) {
		// Created or its steps edited during the incident: the order the
		// steps ran in is not this one's.
		return
	}
	previous := steps[i-1]
	var started time.Time
	failed := false
	for _, l := range c.lives {
		if l.owner != r.owner || l.node != r.node || l.created.Before(incident) || l.obj.GetUID() == obj.GetUID() ||
			stepIndex(steps, l.obj.GetKind(), l.template) != i-1 {
			continue
		}
		if started.IsZero() || l.created.Before(started) {
			started = l.created
		}
		failed = failed || (!l.failed.IsZero() && !l.failed.After(now))
	}
	switch {
	case started.IsZero():
		c.fail(InvNotEarly, "%s created for node %s as step %d of NodeHealthCheck %s, with no step %d (%s) in the incident since %s",
			describe(obj), r.node, i+1, nhc.Name, i, previous.RemediationTemplate.Name, incident.Format("15:04:05"))
	case failed:
		// Its remediator gave up: the next step may follow at once.
	case now.Before(started.Add(previous.Timeout.Duration).Add(-timestampGrain)):
		c.fail(InvNotEarly, "%s created for node %s as step %d of NodeHealthCheck %s, %s after step %d (%s, timeout %s) first started at %s",
			describe(obj), r.node, i+1, nhc.Name, now.Sub(started).Round(time.Second), i, previous.RemediationTemplate.Name,
			previous.Timeout.Duration, started.Format("15:04:05"))
	}
}

// timedOutEarly checks a resource just annotated timed out against its
// step's timeout: no sooner than the timeout after the step's own first
// start in the incident, unless its remediator reported Succeeded=False.
// A step without a timeout (a remediationTemplate) ends when its node
// lease is overdue, three lease durations after it started at the least.
func (c *Checker) timedOutEarly(l *resourceLife, now time.Time) {
	nhc, steps, i := c.stepOfNew(l.obj, l.remediationObj, now)
	if i < 0 || (!l.failed.IsZero() && !l.failed.After(now)) {
		return
	}
	incident := c.recognisedIncidentStart(nhc, l.node, now)
	if then := c.nhcAt(nhc.Name, incident); then == nil || then.UID != nhc.UID || !apiequality.Semantic.DeepEqual(then.Spec.RemediationSteps(), steps) {
		return
	}
	started := l.created
	for _, o := range c.lives {
		if o.owner == l.owner && o.node == l.node && !o.created.Before(incident) && o.created.Before(started) &&
			stepIndex(steps, o.obj.GetKind(), o.template) == i {
			started = o.created
		}
	}
	timeout := steps[i].Timeout.Duration
	if timeout <= 0 {
		timeout = 3 * c.cfg.NodeLeaseDuration
	}
	if now.Before(started.Add(timeout).Add(-timestampGrain)) {
		c.fail(InvNotEarly, "%s of node %s, step %d of NodeHealthCheck %s, annotated timed out %s after the step first started at %s, before its timeout %s",
			describe(l.obj), l.node, i+1, nhc.Name, now.Sub(started).Round(time.Second), started.Format("15:04:05"), timeout)
	}
}

// stepOfNew is a new remediation resource's NodeHealthCheck as it is at
// now, its steps, and the index of the resource's step: -1 when the
// NodeHealthCheck is gone, another of its name, or has no such step.
func (c *Checker) stepOfNew(obj *unstructured.Unstructured, r remediationObj, now time.Time) (*v1alpha1.NodeHealthCheck, []v1alpha1.EscalatingRemediation, int) {
	nhc := c.nhcAt(r.ownerName, now)
	if nhc == nil || nhc.UID != r.owner {
		return nil, nil, -1
	}
	steps := nhc.Spec.RemediationSteps()
	return nhc, steps, stepIndex(steps, obj.GetKind(), r.template)
}

// stepIndex is the index of the step whose template a resource was
// created from, or -1.
func stepIndex(steps []v1alpha1.EscalatingRemediation, kind, template string) int {
	for i, s := range steps {
		if s.RemediationTemplate.Name == template && health.RemediationKind(s.RemediationTemplate.Kind) == kind {
			return i
		}
	}
	return -1
}

// recognisedIncidentStart is when a node's incident began as its
// NodeHealthCheck must know it: the end of the last span in which the node
// was healthy by its conditions (or gone, or not selected) long enough for
// the controller to see it and its healthyDelay to pass, all in calm and
// with every kind the NodeHealthCheck reads readable. A span in which the
// node was gone or not selected for pictureLag ended the incident whatever
// healthyDelay: the delay holds a recovery, and a deselection is none. A
// shorter or unseen recovery, one a negative healthyDelay keeps
// unconfirmed, or one during which a kind it reads could not be read (the
// controller then changes nothing, and keeps what it recorded), does not
// end the incident: the controller goes on with its steps' clocks.
func (c *Checker) recognisedIncidentStart(nhc *v1alpha1.NodeHealthCheck, name string, t time.Time) time.Time {
	var last, healthyFrom, awayFrom time.Time
	healthy, awaySeen := false, false
	kinds := func(then *v1alpha1.NodeHealthCheck) []cluster.Kind {
		k := c.kindsRead(nhc)
		if then != nil && then.UID == nhc.UID {
			k = append(k, c.kindsRead(then)...)
		}
		return k
	}
	seenAway := func(to time.Time) {
		if !awayFrom.IsZero() && to.Sub(awayFrom) >= pictureLag && c.calmOver(awayFrom, to.Add(pictureLag)) &&
			c.readableOver(kinds(c.nhcAt(nhc.Name, awayFrom)), awayFrom, to.Add(pictureLag)) {
			awaySeen = true
		}
		awayFrom = time.Time{}
	}
	end := func(to time.Time) {
		if !healthy {
			return
		}
		healthy = false
		seenAway(to)
		then := c.nhcAt(nhc.Name, healthyFrom)
		delay := time.Duration(0)
		if then != nil && then.Spec.HealthyDelay != nil {
			delay = then.Spec.HealthyDelay.Duration
		}
		node := c.nodeAt(name, to.Add(-time.Nanosecond))
		if node != nil {
			if _, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
				delay = 0
			}
		}
		if awaySeen || delay >= 0 && to.Sub(healthyFrom) >= delay+pictureLag && c.calmOver(healthyFrom, to.Add(pictureLag)) &&
			c.readableOver(kinds(then), healthyFrom, to.Add(pictureLag)) {
			last = to
		}
		awaySeen = false
	}
	for _, v := range c.nodes[name] {
		if v.at.After(t) {
			break
		}
		ill, away := false, true
		if v.obj != nil {
			node := typedOf[corev1.Node](c, v.obj)
			_, matching := conditionsHold(nhc, node, v.at)
			away = !selects(nhc, node)
			ill = matching && !away
		}
		switch {
		case away && awayFrom.IsZero():
			awayFrom = v.at
		case !away:
			seenAway(v.at)
		}
		switch {
		case ill && healthy:
			end(v.at)
		case !ill && !healthy:
			healthy, healthyFrom = true, v.at
		}
	}
	return last
}

// succeededFalse tells whether a remediation resource reports
// Succeeded=False.
func succeededFalse(obj *unstructured.Unstructured) bool {
	return conditionIs(obj, v1alpha1.SucceededCondition, metav1.ConditionFalse)
}
