package gen

import (
	"slices"
	"testing"
)

// The operator's relabelling of a held node is drawn often enough for its
// rule to meet the others, rarely enough to leave the mix as it was, and
// always as an operator does it: the remediators hold their resources
// first, the node goes to another pool and comes back to the one it left.
func TestAnOperatorRelabelsAHeldNodeOutAndBack(t *testing.T) {
	const seeds = 2000
	with := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		h := Generate(seed, 40, FocusNone, DrawnToday)
		at := map[string]string{}
		drawn := false
		for i, s := range h.Steps {
			// A relabelling out and back just after a remediator held
			// its resources.
			held := i > 0 && h.Steps[i-1].Op == OpRemediator && h.Steps[i-1].Behaviour == BehaveFinalize &&
				s.Op == OpRelabel && i+1 < len(h.Steps) && h.Steps[i+1].Op == OpRelabel && h.Steps[i+1].Node == s.Node
			switch {
			case s.Op == OpAddNode:
				at[s.Node] = s.Pool
			case held:
				drawn = true
				if back := h.Steps[i+1]; back.Pool != at[s.Node] || s.Pool == back.Pool || !slices.Contains(append(slices.Clone(pools), parkedPool), s.Pool) {
					t.Fatalf("seed %d: step %d relabels %s from %s to %s, and then to %s", seed, i, s.Node, at[s.Node], s.Pool, back.Pool)
				}
			case s.Op == OpRelabel:
				at[s.Node] = s.Pool
			}
		}
		if drawn {
			with++
		}
	}
	if share := float64(with) / seeds; share < 0.08 || share > 0.25 {
		t.Errorf("%d of %d histories relabel a held node out and back, want 8%% to 25%%", with, seeds)
	}
}
