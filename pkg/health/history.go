package health

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// history builds status.remediationHistory from the last status's records
// and the new status entries, which show the cluster: a node's record opens
// when its entry first has a remediation, follows its steps, and finishes
// when the entry is gone. Only the status and the cluster feed it, so a
// restart, a new leader or a lost status write rebuilds the same records: a
// node with remediations and no open record gets one, started at its first
// resource.
func (b *statusBuilder) history(entries []*v1alpha1.UnhealthyNode) []v1alpha1.RemediationRecord {
	previous := b.in.NHC.Status.RemediationHistory
	h := newHistoryEdit(previous)
	listed := make(map[string]bool, len(entries))
	for _, entry := range entries {
		listed[entry.Name] = true
		i, ok := h.open[entry.Name]
		var r *v1alpha1.RemediationRecord
		if ok {
			if r = h.edit(i); ofAnotherIncident(r, entry) {
				b.finishRecord(r, true)
				ok = false
			}
		}
		rems := entry.Remediations
		if !ok {
			if rems = unrecorded(entry.Remediations, finishedOf(previous, entry.Name)); len(rems) == 0 {
				continue
			}
			h.added = append(h.added, b.newRecord(entry.Name, rems))
			r = &h.added[len(h.added)-1]
		}
		b.followRecord(r, entry, rems)
		if b.deselected(entry.Name) {
			// Its incident ended when it was no longer selected, though
			// its resources are still going.
			b.finishRecord(r, false)
		}
	}
	var selected map[string]bool
	for node, i := range h.open {
		if listed[node] || b.in.PendingNodes[node] {
			continue
		}
		if selected == nil {
			selected = b.selectedNames()
		}
		b.finishRecord(h.edit(i), selected[node])
	}
	return h.records()
}

// ofAnotherIncident says whether an open record is of an incident before
// the entry's: the entry has remediations, and none is a step of the
// record (a relapse after a recovery whose resources went in the same
// sync, so that the entry never left the status). One record per
// incident, never two merged.
func ofAnotherIncident(r *v1alpha1.RemediationRecord, entry *v1alpha1.UnhealthyNode) bool {
	if len(r.Steps) == 0 || len(entry.Remediations) == 0 {
		return false
	}
	for _, rem := range entry.Remediations {
		for i := range r.Steps {
			if isStep(&r.Steps[i], rem) {
				return false
			}
		}
	}
	return true
}

// unrecorded are the remediations of an entry that no finished record
// holds: a deselected node's resources, still going, belong to the record
// its deselection finished, not to one of a later incident.
func unrecorded(rems []*v1alpha1.Remediation, finished []*v1alpha1.RemediationRecord) []*v1alpha1.Remediation {
	if len(finished) == 0 {
		return rems
	}
	var left []*v1alpha1.Remediation
	for _, rem := range rems {
		if !slices.ContainsFunc(finished, func(r *v1alpha1.RemediationRecord) bool {
			return slices.ContainsFunc(r.Steps, func(s v1alpha1.RemediationRecordStep) bool { return isStep(&s, rem) })
		}) {
			left = append(left, rem)
		}
	}
	return left
}

// deselected says whether a node with an entry is no longer selected, and
// not gone: its incident ended (Cancelled) when that was first seen. A gone
// node's record stays open, to be Recovered should a node of its name come
// back healthy.
func (b *statusBuilder) deselected(node string) bool {
	_, orphan := slices.BinarySearch(b.p.Orphans, node)
	return orphan && !b.in.DeletedNodes[node]
}

// newRecord opens the record of a node whose entry has its first
// remediation of an incident (rems, by start). detected is when the
// unhealthy condition's duration passed, if the node is unhealthy now;
// else the start.
func (b *statusBuilder) newRecord(node string, rems []*v1alpha1.Remediation) v1alpha1.RemediationRecord {
	// entries sorts a node's remediations by their start.
	first := rems[0].Started
	r := v1alpha1.RemediationRecord{
		TargetKind: v1alpha1.TargetKindNode, TargetName: node,
		Detected: first, Started: first, Outcome: v1alpha1.OutcomeRemediating,
	}
	if v := b.verdicts[node]; v != nil && v.State == StateUnhealthy && v.Condition != nil {
		r.ConditionType, r.ConditionStatus = v.Condition.Type, v.Condition.Status
		if v.Expires.Before(first.Time) {
			r.Detected = apiTime(v.Expires)
		}
	}
	return r
}

// followRecord brings an open record up to date with the node's entry and
// the remediations of its incident: its steps, whether the node is fenced,
// whether every step timed out.
func (b *statusBuilder) followRecord(r *v1alpha1.RemediationRecord, entry *v1alpha1.UnhealthyNode, rems []*v1alpha1.Remediation) {
	for _, rem := range rems {
		mergeStep(r, rem)
	}
	slices.SortStableFunc(r.Steps, func(a, b v1alpha1.RemediationRecordStep) int { return a.Started.Compare(b.Started.Time) })
	if n := len(r.Steps); n > MaxListedRemediations {
		r.Steps = r.Steps[n-MaxListedRemediations:]
	}
	v := b.verdicts[entry.Name]
	if r.Fenced == nil {
		switch {
		case v != nil:
			r.Fenced = outOfServiceSince(v.Node, r.Started.Time, b.in.Now)
		case b.in.DeletedNodes[entry.Name]:
			r.Fenced = ptr.To(apiTime(b.in.Now))
		}
	}
	if r.Outcome == v1alpha1.OutcomeRemediating && v != nil && v.Waiting == WaitNoTemplate && allTimedOut(entry) {
		r.Outcome = v1alpha1.OutcomeTimedOut
	}
}

// finishRecord ends the record of a node that left the status: healthy
// with its resources gone, deleted, or no longer selected.
func (b *statusBuilder) finishRecord(r *v1alpha1.RemediationRecord, selected bool) {
	deleted := b.in.DeletedNodes[r.TargetName]
	if deleted && r.Fenced == nil {
		r.Fenced = ptr.To(apiTime(b.in.Now))
	}
	if r.Outcome == v1alpha1.OutcomeRemediating {
		switch {
		case selected:
			r.Outcome = v1alpha1.OutcomeRecovered
		case deleted:
			r.Outcome = v1alpha1.OutcomeNodeDeleted
		default:
			r.Outcome = v1alpha1.OutcomeCancelled
		}
	}
	// A creation time ahead of this clock (skew) is no later than the end.
	r.Finished = ptr.To(apiTime(latest(b.in.Now, r.Started.Time)))
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// selectedNames are the names of the selected nodes.
func (b *statusBuilder) selectedNames() map[string]bool {
	names := make(map[string]bool, len(b.p.Nodes))
	for i := range b.p.Nodes {
		names[b.p.Nodes[i].Node.Name] = true
	}
	return names
}

// mergeStep adds a remediation to the record's steps, or updates the step
// of the same resource: same kind, name and creation time.
func mergeStep(r *v1alpha1.RemediationRecord, rem *v1alpha1.Remediation) {
	for i := range r.Steps {
		s := &r.Steps[i]
		if isStep(s, rem) {
			if s.TimedOut == nil {
				s.TimedOut = rem.TimedOut.DeepCopy()
			}
			return
		}
	}
	r.Steps = append(r.Steps, v1alpha1.RemediationRecordStep{
		Kind: rem.Resource.Kind, Name: rem.Resource.Name, TemplateName: rem.TemplateName,
		Started: rem.Started, TimedOut: rem.TimedOut.DeepCopy(),
	})
}

// isStep says whether a record's step is a remediation of an entry.
func isStep(s *v1alpha1.RemediationRecordStep, rem *v1alpha1.Remediation) bool {
	// A compact status entry (compact) names no resource.
	return s.Kind == rem.Resource.Kind && (s.Name == rem.Resource.Name || rem.Resource.Name == "") && s.Started.Equal(&rem.Started)
}

// outOfServiceSince is when the node got the out-of-service taint: its
// timeAdded, not before the remediation started, else now. Nil without it.
func outOfServiceSince(node *nodeview.Node, started, now time.Time) *metav1.Time {
	taint := node.OutOfService
	if taint == nil {
		return nil
	}
	at := now
	if taint.TimeAdded != nil && !taint.TimeAdded.IsZero() {
		at = taint.TimeAdded.Time
		if at.Before(started) {
			at = started
		}
	}
	return ptr.To(apiTime(at))
}

func allTimedOut(entry *v1alpha1.UnhealthyNode) bool {
	for _, rem := range entry.Remediations {
		if rem.TimedOut == nil {
			return false
		}
	}
	return len(entry.Remediations) > 0
}
