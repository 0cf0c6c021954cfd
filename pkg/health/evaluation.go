package health

import (
	"maps"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// evaluation holds the state of one Evaluate call. Its methods stand
// beside the rule each applies (gates.go, escalation.go, lease.go, ...),
// and Evaluate (evaluate.go) calls them in turn.
type evaluation struct {
	in    Input
	rules *rules
	now   time.Time
	// previous status entries by node name.
	previous map[string]*v1alpha1.UnhealthyNode
	// candidates index p.Nodes entries that need their first remediation.
	candidates []int
	// escalations are the nodes whose remediation may move to its next step,
	// decided once the budget and storm state are known.
	escalations []*NodeVerdict
	// withResources holds the selected nodes that have resources.
	withResources map[string]bool
	// busyControlPlane is the one busy set of "one control-plane node at a
	// time": the cluster's (Input.BusyControlPlaneNodes) and the nodes this
	// evaluation finds or starts under remediation.
	busyControlPlane map[string]bool
	// remembered estimates the compacted status bytes of the incidents
	// under way and planned (remembers); -1 until counted.
	remembered int
	p          Plan
}

// busyControlPlane is the busy set an evaluation starts from: the cluster's.
func busyControlPlane(in Input) map[string]bool {
	busy := make(map[string]bool, len(in.BusyControlPlaneNodes)+1)
	maps.Copy(busy, in.BusyControlPlaneNodes)
	return busy
}

// createsFrom records an instant from which a remediation of a node may
// be created (Plan.CreatesFrom, and Plan.CreatesFromAfter's parts).
func (e *evaluation) createsFrom(node string, t time.Time) {
	if e.p.CreatesFrom.IsZero() || t.Before(e.p.CreatesFrom) {
		e.p.CreatesFrom = t
	}
	if t.After(e.now) {
		if e.p.createsLater.IsZero() || t.Before(e.p.createsLater) {
			e.p.createsLater = t
		}
		return
	}
	if e.p.createsNow == nil {
		e.p.createsNow = map[string]bool{}
	}
	e.p.createsNow[node] = true
}

// deadline records a future instant at which the plan changes.
func (e *evaluation) deadline(t time.Time) {
	if t.After(e.now) && (e.p.NextDeadline.IsZero() || t.Before(e.p.NextDeadline)) {
		e.p.NextDeadline = t
	}
}
