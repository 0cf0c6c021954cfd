package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/check"
)

// A history that ends while the API server throttles every request: the
// stopped replica's informers are backing off, and client-go's reflector
// waits out a watch-list back-off on a timer, deaf to its context. The
// history must still end with no goroutine of the replica left.
func TestHistoryEndsWhileThrottled(t *testing.T) {
	synctest.Test(t, func(*testing.T) {
		s := newSim(1, 0)
		s.server.Hooks.Faults = func(*apiserver.Call) apiserver.Fault { return apiserver.FaultThrottled }
		s.boot()
		s.runUntil(time.Now().Add(10 * time.Second))
		s.end()
	})
}

// A goroutine that outlives its history is reported as a broken invariant,
// so that its seed is named and the other histories go on.
func TestGoroutineLeftIsReported(t *testing.T) {
	var v *check.Violation
	func() {
		defer func() { v = goroutinesLeft(recover(), time.Time{}) }()
		synctest.Test(t, func(*testing.T) {
			go func() { <-make(chan struct{}) }()
		})
	}()
	if v == nil || v.Invariant != InvStopped {
		t.Fatalf("got %v, want a violation of %s", v, InvStopped)
	}
}
