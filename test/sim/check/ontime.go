package check

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// InvOnTime: an unhealthy condition counts from its lastTransitionTime
// plus its duration, that instant included (the spec's
// "UnhealthyConditions": "When they match for the time defined in
// duration, remediation will start"; docs/decisions.md, "Deadlines are
// inclusive"): a node that nothing holds back gets its remediation then,
// within onTimeBound, when the cluster has been quiet since the condition
// began, so that the controller, which wakes at the deadline, has nothing
// else to wait for.
const InvOnTime = "remediated-when-its-condition-expires"

// onTimeBound is how late after its condition's deadline a quiet node's
// first resource may be created: the controller takes its lease, reads
// the node at the API server to confirm it, and creates.
const onTimeBound = pictureLag

// quietLead is how long before a condition began the cluster must have
// been calm for the on-time rule: a sync that failed before the calm may
// wait out its retry back-off (30 s at most), and then sees the
// condition's deadline.
const quietLead = 30 * time.Second

// Stepped hears that a step of the history is played now: an actor
// changes the cluster, which the on-time rule needs none of.
func (c *Checker) Stepped() {
	now := time.Now()
	c.steps = slices.DeleteFunc(c.steps, func(t time.Time) bool { return t.Before(now.Add(-maxConditionDuration)) })
	c.steps = append(c.steps, now)
}

// maxConditionDuration bounds how long ago the steps the on-time rule
// reads were played.
const maxConditionDuration = 10 * time.Minute

// livenessBoundOf is how long a node that needs a remediation by a
// NodeHealthCheck since an instant may wait for it: onTimeBound when that
// instant is the deadline of the condition it matches and the cluster has
// been quiet since the condition began (onTime), else livenessBound.
func (c *Checker) livenessBoundOf(node *corev1.Node, by string, since time.Time) (time.Duration, string) {
	nhc := c.nhcAt(by, since)
	if nhc == nil {
		return livenessBound, InvLiveness
	}
	for _, uc := range nhc.Spec.UnhealthyConditions {
		for _, nc := range node.Status.Conditions {
			if nc.Type != uc.Type || nc.Status != uc.Status || !nc.LastTransitionTime.Add(uc.Duration.Duration).Equal(since) {
				continue
			}
			if c.quietSince(nhc, nc.LastTransitionTime.Time, since) {
				return onTimeBound, InvOnTime
			}
		}
	}
	return livenessBound, InvLiveness
}

// quietSince tells whether nothing but the controller changed the
// cluster from a condition's start to its deadline, calm since quietLead
// before the start, with every kind the NodeHealthCheck reads readable for
// statusBound before.
func (c *Checker) quietSince(nhc *v1alpha1.NodeHealthCheck, from, deadline time.Time) bool {
	calmFrom := from
	if lead := deadline.Add(-quietLead); lead.Before(calmFrom) {
		calmFrom = lead
	}
	return !c.calmSince.IsZero() && !c.calmSince.After(calmFrom) && c.freshOver(calmFrom, deadline) && c.watchLag() >= 0 &&
		c.readableOver(c.kindsReadOver(nhc, deadline.Add(-statusBound), deadline), deadline.Add(-statusBound), deadline) &&
		!slices.ContainsFunc(c.steps, func(t time.Time) bool { return t.After(from) && !t.After(deadline) })
}
