package inflight

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// The control-plane slot: a sync's busy set comes from caches, which show
// a create only after it happened, so two syncs could each start a
// control-plane node. A control-plane create books the slot before it is
// sent (Book), by the rule the decision follows too
// (health.AnotherControlPlaneNode), and holds it until its resource is seen
// gone or the create certainly failed; a lapsed one is looked up, not
// dropped (Lapsed), and so is one whose kind's informer synced again
// (Resynced): a deletion while the kind could not be read has no event.

// ControlPlaneNodes lists the nodes whose creates hold the control-plane
// slot.
func (f *Ledger) ControlPlaneNodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(f.controlPlaneSlot())
}

// controlPlaneSlot yields the nodes whose creates hold the slot, once
// each; f.mu is held.
func (f *Ledger) controlPlaneSlot() iter.Seq[string] {
	return func(yield func(string) bool) {
		var seen []string
		for _, w := range f.writes {
			if !w.controlPlane || slices.Contains(seen, w.node) {
				continue
			}
			seen = append(seen, w.node)
			if !yield(w.node) {
				return
			}
		}
	}
}

// controlPlaneBusyError reports a control-plane remediation that waits,
// because another control-plane node's remediation was started meanwhile.
type controlPlaneBusyError struct {
	node string
}

func (e *controlPlaneBusyError) Error() string {
	return fmt.Sprintf("another control-plane node's remediation has just started; %s waits, to protect etcd quorum", e.node)
}

// remediatedByOtherError reports a first remediation that is not sent,
// because another NodeHealthCheck remediates the node.
type remediatedByOtherError struct {
	node, other string
}

func (e *remediatedByOtherError) Error() string {
	return fmt.Sprintf("NodeHealthCheck %s remediates node %s, or is starting to; only one NodeHealthCheck remediates a node, and this one leaves it alone", e.other, e.node)
}

// Refused tells whether Book refused a create: its node waits, and the
// error says why.
func Refused(err error) bool {
	var busy *controlPlaneBusyError
	var other *remediatedByOtherError
	return errors.As(err, &busy) || errors.As(err, &other)
}
