package health

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// An incident's end (incident.go): the mark its record keeps (a recovery's,
// a deselection's), the healthy delay counted from it, and what a later
// incident of the node makes of the resources it left.

// ofThisIncident tells whether a resource of an unhealthy node belongs to
// its incident, whichever unhealthy condition it shows now, so the
// condition's start (since) alone cannot tell. One created no later than
// the last incident's end (endedAt) is of none after it; else one created
// since the condition started is of it, and so is one the record keeps.
func ofThisIncident(r *Remediation, since time.Time, record *v1alpha1.UnhealthyNode) bool {
	if ended := endedAt(record); ended != nil && !r.Created.After(ended.Time) {
		return false
	}
	if !since.IsZero() && !r.Created.Before(since) {
		return true
	}
	return entryRemediation(record, r.Ref.UID) != nil
}

// endedAt is when a record says its incident ended: the node's recovery,
// or when the NodeHealthCheck stopped selecting it or saw it gone
// (orphanEnd). Nil while an incident is under way.
func endedAt(record *v1alpha1.UnhealthyNode) *metav1.Time {
	if record == nil {
		return nil
	}
	return record.ConditionsHealthyTimestamp
}

// orphanEnd is the end mark of a node no longer selected, or gone: its
// incident ends when that is first seen, as at a recovery, and the mark
// stays while its resources remain, so that none is taken for a step of
// a later incident.
func orphanEnd(record *v1alpha1.UnhealthyNode, now time.Time) *metav1.Time {
	if ended := endedAt(record); ended != nil {
		return ended.DeepCopy()
	}
	return ptr.To(apiTime(now))
}

// delayedSince is the record's mark when it is a recovery's that
// healthyDelay holds (healthyDelayed): since when the node reported
// healthy. Nil for a deselection's mark, or a recovery's whose resources
// were deleted at once.
func delayedSince(record *v1alpha1.UnhealthyNode) *metav1.Time {
	if record == nil || record.HealthyDelayed == nil || !*record.HealthyDelayed {
		return nil
	}
	return record.ConditionsHealthyTimestamp
}

// healthyDelayStart is when a node was first seen healthy: the earliest
// healthy-delay start of its resources (delayStart), else its record's
// mark of a recovery healthyDelay holds, else now. A deselection's mark is
// not when the node reported healthy.
func healthyDelayStart(resources []Remediation, record *v1alpha1.UnhealthyNode, now time.Time) time.Time {
	var start time.Time
	for i := range resources {
		if t := delayStart(&resources[i], record); !t.IsZero() && (start.IsZero() || t.Before(start)) {
			start = t
		}
	}
	if since := delayedSince(record); start.IsZero() && since != nil {
		start = since.Time
	}
	if start.IsZero() {
		start = now
	}
	return start
}

// delayStart is a resource's healthy-delay start as its record counts it:
// its annotation, but none when its record ends at a mark without
// healthyDelayed (a deselection's) that the annotation does not come after:
// it was stamped for the incident the mark ended, and the recovery after
// it counts its own delay, stamped anew.
func delayStart(r *Remediation, record *v1alpha1.UnhealthyNode) time.Time {
	if ended := endedAt(record); ended != nil && delayedSince(record) == nil && !r.HealthyDelayStart.After(ended.Time) {
		return time.Time{}
	}
	return r.HealthyDelayStart
}

// leftOver tells whether a node unhealthy again still has resources of
// its ended incident: deleting, one the controller deleted at the end
// (ofThisIncident); undeleted, one created no later than the record's mark
// that is not being deleted though its deletion was due then (leftBehind),
// or since healthyDelay passed. A relapse waits for the first to go; the
// second the controller does not delete while the node is unhealthy, and
// the node waits (incidentBlocked) until it recovers, or someone deletes
// it. Only a recovery that healthyDelay held (delayedSince) keeps its
// resources within the delay, and a relapse goes on with them.
func leftOver(healthyDelay time.Duration, now, since time.Time, resources []Remediation, record *v1alpha1.UnhealthyNode) (deleting, undeleted bool) {
	ended := endedAt(record)
	if ended == nil {
		return false, false
	}
	delayPassed := healthyDelay >= 0 && !ended.Add(healthyDelay).After(now)
	for i := range resources {
		r := &resources[i]
		deleting = deleting || (r.Deleting && !ofThisIncident(r, since, record))
		undeleted = undeleted || leftBehind(r, record) || (delayPassed && !r.Deleting && !r.Created.After(ended.Time))
	}
	return deleting, undeleted
}

// leftBehind tells whether a resource outlived the incident that ended at
// its record's mark, and is of none since: not being deleted, created no
// later than the mark, and the mark is a deselection's (not
// healthyDelayed), or a healthy delay started after it (the node, selected
// again, reported healthy since; see allLeftBehind).
func leftBehind(r *Remediation, record *v1alpha1.UnhealthyNode) bool {
	ended := endedAt(record)
	if ended == nil || r.Deleting || r.Created.After(ended.Time) {
		return false
	}
	return delayedSince(record) == nil || r.HealthyDelayStart.After(ended.Time)
}

// allLeftBehind tells whether a recovering node holds resources and every
// one it does not delete yet is left behind: its record keeps the mark of
// the incident they outlived, with healthyDelayed once their healthy delay
// started (a start later than the mark tells them apart from a held
// recovery's), so that a relapse waits for them instead of taking up
// their step on the old clock.
func allLeftBehind(resources []Remediation, record *v1alpha1.UnhealthyNode) bool {
	held := false
	for i := range resources {
		if r := &resources[i]; !r.Deleting {
			if !leftBehind(r, record) {
				return false
			}
			held = true
		}
	}
	return held
}
