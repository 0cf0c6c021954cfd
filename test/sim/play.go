package sim

import (
	"context"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
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

// afterStop is how long a history waits once its last replica stopped:
// client-go's reflector waits out a watch-list back-off (at most 30 s,
// jittered up to twice that) before it looks at its context again, and a
// bubble's time stops when its main goroutine returns.
const afterStop = 2 * time.Minute

// InvStopped is broken when a replica's goroutine outlives it: once the
// history ended and its replicas stopped, every goroutine they started must
// end; one that waits for ever is a leak the binary would carry too.
const InvStopped = "stopped-replica-ends"

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
	// Labelled so that a crash no recover reaches still names the seed.
	pprof.Do(context.Background(), pprof.Labels("seed", strconv.FormatUint(h.Seed, 10), "test", t.Name()), func(context.Context) {
		violation = play(t, h, trace, stats)
	})
	return violation
}

// play is playWith in the caller's goroutine labels.
func play(t *testing.T, h gen.History, trace func(format string, args ...any), stats *Stats) (violation *check.Violation) {
	var ended time.Time
	defer func() {
		v := goroutinesLeft(recover(), ended)
		if v != nil && trace != nil {
			trace("%s", bubbleStacks())
		}
		if v != nil && violation == nil {
			violation = v
		}
	}()
	synctest.Test(t, func(*testing.T) {
		s := newSim(h.Seed, h.StatusBytes)
		s.trace = trace
		if h.StatusBytes > 0 {
			s.tracef("world: statusBytes=%d (the status's bound on its entries)", h.StatusBytes)
		}
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
		ended = time.Now()
		s.end()
		violation = s.check.Violation()
	})
	return violation
}

// end stops the leader, and waits until what it started has ended.
func (s *sim) end() {
	if s.leader != nil {
		s.stop(s.leader)
	}
	time.Sleep(afterStop)
}

// goroutinesLeft turns synctest's panic over goroutines that outlived the
// history into a violation, so that its seed is reported and the other
// histories go on; any other panic goes on up.
func goroutinesLeft(recovered any, ended time.Time) *check.Violation {
	if recovered == nil {
		return nil
	}
	err, ok := recovered.(error)
	if !ok || !strings.HasPrefix(err.Error(), "deadlock: ") {
		panic(recovered)
	}
	return &check.Violation{Invariant: InvStopped, At: ended, Detail: err.Error()}
}

// bubbleStacks are the stacks of the goroutines in synctest bubbles: in a
// replay, those a stopped replica left behind.
func bubbleStacks() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var kept []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "synctest bubble") {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n")
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
	// Tracebacks print goroutine labels: a crash names the seed playWith set.
	_ = os.Setenv("GODEBUG", strings.TrimPrefix(os.Getenv("GODEBUG")+",tracebacklabels=1", ","))
	// apimachinery's error handlers pace errors against the real clock,
	// which the virtual clock of a bubble lies decades behind: they would
	// sleep for decades. The errors themselves mean nothing here.
	utilruntime.ErrorHandlers = nil
	// The informers log to klog's global logger; what matters is in the
	// trace, with the replica's own logger.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
}
