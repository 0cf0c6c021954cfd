package check

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// When to look again: a liveness judgement refused or not yet due may
// change with nothing at the API server changing, when a deadline comes,
// a lease or an unhealthy condition's duration runs out, a grace period
// ends, or the picture pictureLag old catches up with a change. The
// simulation wakes only when something is due (NextDue), so each such
// instant is asked for (recheckAt) by the judgement that waits for it;
// otherwise a stalled controller would be caught only when something else
// happened to wake it.

// recheckAt asks for a check at t, when it is still to come.
func (c *Checker) recheckAt(t time.Time) {
	if t.After(time.Now()) && (c.recheck.IsZero() || t.Before(c.recheck)) {
		c.recheck = t
	}
}

// notePictureChange records that the nodes or the remediation resources
// changed now, forgetting the changes the picture pictureLag old has seen.
func (c *Checker) notePictureChange() {
	now := time.Now()
	c.forgetSeenChanges(now)
	if n := len(c.pictureChanges); n == 0 || c.pictureChanges[n-1].Before(now) {
		c.pictureChanges = append(c.pictureChanges, now)
	}
}

// forgetSeenChanges drops the changes at or before pictureLag ago.
func (c *Checker) forgetSeenChanges(now time.Time) {
	from := now.Add(-pictureLag)
	i := 0
	for i < len(c.pictureChanges) && !c.pictureChanges[i].After(from) {
		i++
	}
	c.pictureChanges = c.pictureChanges[i:]
}

// recheckLaggedPicture asks for a check when the picture pictureLag old
// next changes: a judgement it refused may change then.
func (c *Checker) recheckLaggedPicture() {
	now := time.Now()
	c.forgetSeenChanges(now)
	if len(c.pictureChanges) > 0 {
		c.recheckAt(c.pictureChanges[0].Add(pictureLag))
	}
}

// budgetAllowsLately tells whether a NodeHealthCheck's budget allows a new
// step as the controller may count it now, from the cluster now or
// pictureLag ago; when it does not, the older picture may still catch up.
func (c *Checker) budgetAllowsLately(nhc *v1alpha1.NodeHealthCheck) bool {
	now := time.Now()
	if c.budgetAllows(nhc, now, now.Add(-pictureLag)) {
		return true
	}
	c.recheckLaggedPicture()
	return false
}

// unhealthyLongEnough tells whether one of a NodeHealthCheck's unhealthy
// conditions has held on a node for its whole duration; while one holds
// whose duration runs, the checker looks again when it has passed.
func (c *Checker) unhealthyLongEnough(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node) bool {
	now := time.Now()
	if conditionsExpired(nhc, node, now) {
		return true
	}
	for _, uc := range nhc.Spec.UnhealthyConditions {
		for _, nc := range node.Status.Conditions {
			if nc.Type == uc.Type && nc.Status == uc.Status {
				c.recheckAt(nc.LastTransitionTime.Add(uc.Duration.Duration))
			}
		}
	}
	return false
}
