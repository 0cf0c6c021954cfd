package sim

import (
	"io"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

// tail is how long a history runs on after its last step, so that what it
// started can finish or show that it never does.
const tail = 5 * time.Minute

// Play plays a history in a synctest bubble and returns the first
// invariant it broke, or nil.
func Play(t *testing.T, h History) (violation *Violation) {
	return playWith(t, h, nil, nil)
}

// buildsWorld tells whether a step builds the world a history starts from.
func buildsWorld(step Step) bool {
	return step.Op == OpAddNode || step.Op == OpTemplate || step.Op == OpCreateNHC
}

// Stats count what a history played.
type Stats struct {
	Steps, Checks int
}

// playWith is Play, telling trace of every step, write and log line, and
// counting into stats.
func playWith(t *testing.T, h History, trace func(format string, args ...any), stats *Stats) (violation *Violation) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(h.Seed)
		s.trace = trace
		defer func() {
			if stats != nil {
				stats.Steps, stats.Checks = len(h.Steps), s.check.checks
			}
		}()
		s.boot()
		for _, step := range h.Steps {
			// The initial world stands before the controller starts: the
			// first runUntil starts it.
			if s.replicaCount > 0 || step.After > 0 || !buildsWorld(step) {
				s.runUntil(time.Now().Add(step.After))
				if s.check.failed() {
					break
				}
			}
			s.tracef("step %s", step)
			s.playStep(step)
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
	// The informers log to klog's global logger; what matters is in the
	// trace, with the replica's own logger.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
