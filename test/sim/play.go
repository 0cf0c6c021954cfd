package sim

import (
	"io"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/test/sim/check"
	"github.com/nodehealthcheck/nhc-controller/test/sim/gen"
)

// tail is how long a history runs on after its last step, so that what it
// started can finish or show that it never does.
const tail = 5 * time.Minute

// Play plays a history in a synctest bubble and returns the first
// invariant it broke, or nil.
func Play(t *testing.T, h gen.History) (violation *check.Violation) {
	return playWith(t, h, nil, nil)
}

// buildsWorld tells whether a step builds the world a history starts from.
func buildsWorld(step gen.Step) bool {
	return step.Op == gen.OpAddNode || step.Op == gen.OpTemplate || step.Op == gen.OpCreateNHC
}

// Stats count what a history played.
type Stats struct {
	Steps, Checks int
}

// playWith is Play, telling trace of every step, write and log line, and
// counting into stats.
func playWith(t *testing.T, h gen.History, trace func(format string, args ...any), stats *Stats) (violation *check.Violation) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(h.Seed)
		s.trace = trace
		defer func() {
			if stats != nil {
				stats.Steps, stats.Checks = len(h.Steps), s.check.Checks()
			}
		}()
		s.boot()
		for _, step := range h.Steps {
			// The initial world stands before the controller starts: the
			// first runUntil starts it.
			if s.replicaCount > 0 || step.After > 0 || !buildsWorld(step) {
				s.runUntil(time.Now().Add(step.After))
				if s.check.Failed() {
					break
				}
			}
			s.tracef("step %s", step)
			s.playStep(step)
		}
		if !s.check.Failed() {
			s.runUntil(time.Now().Add(tail))
		}
		if s.leader != nil {
			s.stop(s.leader)
		}
		violation = s.check.Violation()
	})
	return violation
}

// Shrink returns the shortest history it finds that still breaks the same
// invariant as broken (gen.Shrink), and the violation it last broke.
func Shrink(t *testing.T, h gen.History, broken *check.Violation) (gen.History, *check.Violation) {
	shrunk := gen.Shrink(h, func(candidate gen.History) bool {
		v := Play(t, candidate)
		if v != nil && v.Invariant == broken.Invariant {
			broken = v
			return true
		}
		return false
	})
	return shrunk, broken
}

// Reproduces counts the plays of n in which a history breaks an invariant:
// goroutines racing within one instant may not interleave the same way
// every time, so a failure says how often it comes back.
func Reproduces(t *testing.T, h gen.History, invariant string, n int) int {
	count := 0
	for range n {
		if v := Play(t, h); v != nil && v.Invariant == invariant {
			count++
		}
	}
	return count
}

func init() {
	// apimachinery's error handlers pace errors against the real clock,
	// which the virtual clock of a bubble lies decades behind: they would
	// sleep for decades. The errors themselves mean nothing here.
	utilruntime.ErrorHandlers = nil
	// The informers log to klog's global logger; what matters is in the
	// trace, with the replica's own logger.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
