package sim

import (
	"testing"
	"time"
)

// Shrink returns the shortest history it finds that still breaks the same
// invariant: it drops runs of steps, halving their length, then single
// steps, then shortens the time between steps, until nothing more can go.
func Shrink(t *testing.T, h History, broken *Violation) (History, *Violation) {
	still := func(candidate History) bool {
		v := Play(t, candidate)
		if v != nil && v.Invariant == broken.Invariant {
			broken = v
			return true
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for size := len(h.Steps) / 2; size >= 1; size /= 2 {
			for start := 0; start+size <= len(h.Steps); {
				candidate := History{Seed: h.Seed, Steps: append(append([]Step{}, h.Steps[:start]...), h.Steps[start+size:]...)}
				if still(candidate) {
					h, changed = candidate, true
					continue
				}
				start += size
			}
		}
		for i := range h.Steps {
			for _, after := range []time.Duration{0, h.Steps[i].After / 2} {
				if h.Steps[i].After <= after {
					continue
				}
				candidate := History{Seed: h.Seed, Steps: append([]Step{}, h.Steps...)}
				candidate.Steps[i].After = after
				if still(candidate) {
					h, changed = candidate, true
					break
				}
			}
		}
	}
	return h, broken
}

// Reproduces counts the plays of n in which a history breaks an invariant:
// goroutines racing within one instant may not interleave the same way
// every time, so a failure says how often it comes back.
func Reproduces(t *testing.T, h History, invariant string, n int) int {
	count := 0
	for range n {
		if v := Play(t, h); v != nil && v.Invariant == invariant {
			count++
		}
	}
	return count
}
