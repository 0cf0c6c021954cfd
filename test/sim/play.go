package sim

import (
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// tail is how long a history runs on after its last step, so that what it
// started can finish or show that it never does.
const tail = 5 * time.Minute

// Play plays a history in a synctest bubble and returns the first
// invariant it broke, or nil.
func Play(t *testing.T, h History) (violation *Violation) {
	return play(t, h, nil)
}

// play is Play, telling trace of every step and every write served.
func play(t *testing.T, h History, trace func(format string, args ...any)) (violation *Violation) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(h.Seed)
		s.trace = trace
		s.boot()
		for _, step := range h.Steps {
			if step.Op == OpAddNode || step.Op == OpTemplate || step.Op == OpCreateNHC {
				if step.After == 0 && s.leader == nil {
					s.apply(step)
					continue
				}
			}
			if s.leader == nil && s.replicaCount == 0 {
				s.renewLeadership()
			}
			s.runUntil(time.Now().Add(step.After))
			if s.check.failed() {
				break
			}
			s.tracef("step %s", step)
			s.apply(step)
		}
		if s.replicaCount == 0 {
			s.renewLeadership()
		}
		if !s.check.failed() {
			s.runUntil(time.Now().Add(tail))
		}
		if s.leader != nil {
			s.stop(s.leader)
		}
		violation = s.check.violation
	})
	return violation
}

func init() {
	// apimachinery's error handlers pace errors against the real clock,
	// which the virtual clock of a bubble lies decades behind: they would
	// sleep for decades. The errors themselves mean nothing here.
	utilruntime.ErrorHandlers = nil
}
