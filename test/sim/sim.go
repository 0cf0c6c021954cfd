package sim

import (
	"net/http"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sim is one history being played: the simulated API server, the
// controller replicas, the actors around them (kubelets, remediators,
// node-maintenance-operator, an operator with kubectl), and the invariants
// checked after every change. It runs inside a synctest bubble, so that its
// clock is virtual: time passes only while every goroutine waits.
type sim struct {
	server *Server
	// seed is the history's: it decides the faults.
	seed uint64
	// leader is the replica that acts; nil while none runs.
	leader       *replica
	replicaCount int
	// nextLeaderAt is when a standby may take the lease over.
	nextLeaderAt time.Time
	// faultUntil ends the API fault window; faultMode is its kind.
	faultUntil time.Time
	faultMode  fault
	check      *checker
	// trace, when set, hears of every step and every write served.
	trace func(format string, args ...any)
}

func (s *sim) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

func newSim(seed uint64) *sim {
	s := &sim{seed: seed}
	s.server = newServer(time.Now)
	s.check = newChecker(s)
	s.server.store.changed = func(gvr schema.GroupVersionResource, e event, old *unstructured.Unstructured) {
		s.server.changed(gvr, e)
		s.check.observe(gvr, e, old)
	}
	s.server.faults = s.faultOf
	s.server.attempts = s.check.attempt
	s.server.lostAnswers = s.check.lostAnswer
	s.server.shown = s.check.shown
	s.server.writes = func(c *call, resp *http.Response) {
		s.tracef("%s %s %s -> %d (arrived %s) %s", c.client, c.r.verb, c.req.URL.Path, resp.StatusCode, c.arrived.Format("15:04:05.000"), c.req.Header.Get("Content-Type"))
		s.check.write(c, resp)
	}
	return s
}

// settle serves the parked requests and delivers the watch events due,
// round after round, until every goroutine waits for something that only
// time or the next step brings.
func (s *sim) settle() {
	for {
		synctest.Wait()
		calls := s.server.take()
		if len(calls) == 0 && !s.server.pending() {
			return
		}
		// One batch under the lock: the clients woken by an answer wait
		// for the lock before they read, so that they all read what the
		// whole batch left, whatever order they wake in.
		s.locked(func() {
			for _, c := range calls {
				s.server.answerLocked(c)
			}
			s.server.deliverLocked()
		})
	}
}

// settleFor is settle while a replica stops: its own requests are dropped.
func (s *sim) settleFor(client string) {
	synctest.Wait()
	s.server.dropClient(client)
	s.settle()
}

// runUntil lets time pass until end: whenever a request parks or a watch
// event falls due, the simulation wakes, serves it and checks the
// invariants; otherwise the virtual clock jumps to the next timer.
func (s *sim) runUntil(end time.Time) {
	for {
		// A replica started or healed now is served at this instant too.
		s.renewLeadership()
		s.settle()
		s.locked(s.check.now)
		if s.check.failed() {
			return
		}
		now := time.Now()
		if !now.Before(end) {
			return
		}
		next := end
		for _, t := range []time.Time{s.server.nextDue(), s.check.nextDue(), s.nextLeadershipChange(), s.faultUntil} {
			if t.After(now) && t.Before(next) {
				next = t
			}
		}
		timer := time.NewTimer(max(next.Sub(now), time.Millisecond))
		select {
		case <-s.server.knock:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// locked runs f with the API server's state locked: the actors and the
// checker read and write the store directly.
func (s *sim) locked(f func()) {
	s.server.state.Lock()
	defer s.server.state.Unlock()
	f()
}
