package health

import (
	"slices"
	"strings"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// historyBudget bounds the estimated bytes of status.remediationHistory, so
// that the whole status stays under about 900 KiB (see status_bounds.go).
const historyBudget = 64 << 10

// historyEdit is a history being brought up to date: the last status's
// records, the edited copies of its open ones and the records added. The
// history is rebuilt only when one of them changed: most syncs change
// none, and a NodeHealthCheck's history holds up to 50 records.
type historyEdit struct {
	previous []v1alpha1.RemediationRecord
	// open is the index of each node's open record in previous.
	open map[string]int
	// dropped are open records of a node that has one before them: one
	// remediation per node at a time, a second open record cannot be true.
	dropped []int
	// edited are copies of open records, by their index in previous.
	edited map[int]*v1alpha1.RemediationRecord
	added  []v1alpha1.RemediationRecord
}

func newHistoryEdit(previous []v1alpha1.RemediationRecord) *historyEdit {
	h := &historyEdit{previous: previous, open: map[string]int{}, edited: map[int]*v1alpha1.RemediationRecord{}}
	for i := range previous {
		r := &previous[i]
		if r.Finished != nil {
			continue
		}
		if _, seen := h.open[r.TargetName]; seen {
			h.dropped = append(h.dropped, i)
			continue
		}
		h.open[r.TargetName] = i
	}
	return h
}

// edit returns the copy of the open record at i, to follow: a finished
// record never changes again, and the last status's records are shared.
func (h *historyEdit) edit(i int) *v1alpha1.RemediationRecord {
	r, ok := h.edited[i]
	if !ok {
		r = h.previous[i].DeepCopy()
		h.edited[i] = r
	}
	return r
}

// records returns the history: the last status's very slice when nothing
// changed, so that comparing the status with the last one, as every sync
// does, finds it at once; else the records in order and bounded
// (boundHistory).
func (h *historyEdit) records() []v1alpha1.RemediationRecord {
	if h.unchanged() && isBounded(h.previous) {
		return h.previous
	}
	records := make([]v1alpha1.RemediationRecord, 0, len(h.previous)+len(h.added))
	for i := range h.previous {
		switch r, edited := h.edited[i]; {
		case slices.Contains(h.dropped, i):
		case edited:
			records = append(records, *r)
		default:
			records = append(records, h.previous[i])
		}
	}
	records = boundHistory(append(records, h.added...))
	if sameHistory(records, h.previous) {
		return h.previous
	}
	return records
}

// unchanged tells whether no record was added, dropped or changed.
func (h *historyEdit) unchanged() bool {
	if len(h.added) > 0 || len(h.dropped) > 0 {
		return false
	}
	for i, r := range h.edited {
		if !sameRecord(r, &h.previous[i]) {
			return false
		}
	}
	return true
}

// finishedOf are the finished records of a node.
func finishedOf(history []v1alpha1.RemediationRecord, node string) []*v1alpha1.RemediationRecord {
	var finished []*v1alpha1.RemediationRecord
	for i := range history {
		if r := &history[i]; r.Finished != nil && r.TargetName == node {
			finished = append(finished, r)
		}
	}
	return finished
}

// sameHistory tells whether two histories hold the same records in the
// same order, each time by its instant.
func sameHistory(a, b []v1alpha1.RemediationRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameRecord(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// sameRecord tells whether two records are equal, their times by their
// instants, as the API's semantic equality has them. Written out, it is
// many times faster than reflection over a record's pointers; a test
// changes each field of the types in turn and fails on one it misses.
func sameRecord(a, b *v1alpha1.RemediationRecord) bool {
	return a.TargetKind == b.TargetKind && a.TargetName == b.TargetName &&
		a.ConditionType == b.ConditionType && a.ConditionStatus == b.ConditionStatus &&
		a.Detected.Equal(&b.Detected) && a.Started.Equal(&b.Started) &&
		a.Fenced.Equal(b.Fenced) && a.Finished.Equal(b.Finished) && a.Outcome == b.Outcome &&
		slices.EqualFunc(a.Steps, b.Steps, func(x, y v1alpha1.RemediationRecordStep) bool {
			return x.Kind == y.Kind && x.Name == y.Name && x.TemplateName == y.TemplateName &&
				x.Started.Equal(&y.Started) && x.TimedOut.Equal(y.TimedOut)
		})
}

// boundHistory orders the records newest first (by started) and keeps
// those that fit: at most MaxRemediationHistory, within historyBudget.
func boundHistory(records []v1alpha1.RemediationRecord) []v1alpha1.RemediationRecord {
	slices.SortStableFunc(records, newestFirst)
	if records = records[:fitting(records)]; len(records) == 0 {
		return nil
	}
	return records
}

// isBounded tells whether boundHistory leaves a history as it is.
func isBounded(records []v1alpha1.RemediationRecord) bool {
	return slices.IsSortedFunc(records, newestFirst) && fitting(records) == len(records)
}

// newestFirst orders records by their start, newest first.
func newestFirst(a, b v1alpha1.RemediationRecord) int {
	if c := b.Started.Compare(a.Started.Time); c != 0 {
		return c
	}
	// Creation times have one-second precision: within a second, the
	// ongoing ones, then the last to finish.
	if c := boolOrder(a.Finished != nil, b.Finished != nil); c != 0 {
		return c
	}
	if a.Finished != nil {
		if c := b.Finished.Compare(a.Finished.Time); c != 0 {
			return c
		}
	}
	return strings.Compare(a.TargetName, b.TargetName)
}

// fitting is how many of the first records fit: at most
// MaxRemediationHistory, within historyBudget.
func fitting(records []v1alpha1.RemediationRecord) int {
	size := 0
	for i := range records {
		size += recordSize(&records[i])
		if i == v1alpha1.MaxRemediationHistory || size > historyBudget {
			return i
		}
	}
	return len(records)
}

// recordSize estimates a record's bytes in JSON.
func recordSize(r *v1alpha1.RemediationRecord) int {
	size := len(r.TargetName) + len(r.ConditionType) + len(r.ConditionStatus) + 250
	for i := range r.Steps {
		s := &r.Steps[i]
		size += len(s.Kind) + len(s.Name) + len(s.TemplateName) + 110
	}
	return size
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
