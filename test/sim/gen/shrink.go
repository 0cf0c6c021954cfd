package gen

import "time"

// Shrink returns the shortest history it finds that still breaks: breaks
// plays a candidate and tells whether it breaks the same invariant as h.
// It drops runs of steps, halving their length, then single steps, then
// shortens the time between steps, until nothing more can go; the world's
// choices (StatusBytes) stay.
func Shrink(h History, breaks func(candidate History) bool) History {
	for changed := true; changed; {
		changed = false
		for size := len(h.Steps) / 2; size >= 1; size /= 2 {
			for start := 0; start+size <= len(h.Steps); {
				candidate := h
				candidate.Steps = append(append([]Step{}, h.Steps[:start]...), h.Steps[start+size:]...)
				if breaks(candidate) {
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
				candidate := h
				candidate.Steps = append([]Step{}, h.Steps...)
				candidate.Steps[i].After = after
				if breaks(candidate) {
					h, changed = candidate, true
					break
				}
			}
		}
	}
	return h
}
