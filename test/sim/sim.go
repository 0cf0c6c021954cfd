package sim

import (
	"net/http"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/check"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// sim is one history being played: the simulated API server, the
// controller replicas, the actors around them (kubelets, remediators,
// node-maintenance-operator, an operator with kubectl), and the invariants
// checked after every change. It runs inside a synctest bubble, so that its
// clock is virtual: time passes only while every goroutine waits.
type sim struct {
	server *apiserver.Server
	// seed is the history's: it decides the faults.
	seed uint64
	// statusBytes is the history's bound on its statuses' entries
	// (gen.History.StatusBytes), which every replica runs with.
	statusBytes int
	// leader is the replica that acts; nil while none runs.
	leader       *replica
	replicaCount int
	// nextLeaderAt is when a standby may take the lease over.
	nextLeaderAt time.Time
	// faultUntil ends the API fault window; faultMode is its kind.
	faultUntil time.Time
	faultMode  apiserver.Fault
	// denied are the nodes whose resources of a kind its remediator's
	// webhook refuses (admit).
	denied map[schema.GroupVersionResource]map[string]bool
	check  *check.Checker
	// trace, when set, hears of every step and every write served.
	trace func(format string, args ...any)
}

func (s *sim) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

func newSim(seed uint64, statusBytes int) *sim {
	s := &sim{seed: seed, statusBytes: statusBytes, denied: map[schema.GroupVersionResource]map[string]bool{}}
	// Every replica watches nodes, NodeHealthChecks and leases for as long
	// as it runs.
	s.server = apiserver.New(time.Now, cluster.Nodes, cluster.NodeHealthChecks, cluster.Leases)
	s.check = check.New(s.server, check.Config{Calm: s.calm, Leader: s.leaderName, LeaseNamespace: leaseNamespace, NodeLeaseDuration: nodeLeaseDuration,
		StatusBytes: statusBytes})
	s.server.Hooks = apiserver.Hooks{
		Changed:     s.check.Observe,
		Faults:      s.faultOf,
		Attempts:    s.check.Attempt,
		Refused:     s.check.Attempt,
		LostAnswers: s.check.LostAnswer,
		Shown:       s.check.Shown,
		Admit:       s.admit,
		Writes: func(c *apiserver.Call, resp *http.Response) {
			s.tracef("%s %s %s -> %d (arrived %s) %s", c.Client, c.Verb, c.HTTP.URL.Path, resp.StatusCode, c.Arrived.Format("15:04:05.000"), c.HTTP.Header.Get("Content-Type"))
			s.check.Write(c, resp)
		},
	}
	return s
}

// settleFor settles while a replica stops: its own requests are dropped.
func (s *sim) settleFor(client string) {
	synctest.Wait()
	s.server.DropClient(client)
	s.server.Settle()
}

// runUntil lets time pass until end: whenever a request parks or a watch
// event falls due, the simulation wakes, serves it and checks the
// invariants; otherwise the virtual clock jumps to the next timer.
func (s *sim) runUntil(end time.Time) {
	for {
		// A replica started or healed now is served at this instant too.
		s.renewLeadership()
		s.server.Settle()
		s.locked(s.check.Check)
		if s.check.Failed() {
			return
		}
		now := time.Now()
		if !now.Before(end) {
			return
		}
		next := end
		for _, t := range []time.Time{s.server.NextDue(), s.check.NextDue(), s.nextLeadershipChange(), s.faultUntil} {
			if t.After(now) && t.Before(next) {
				next = t
			}
		}
		timer := time.NewTimer(max(next.Sub(now), time.Millisecond))
		select {
		case <-s.server.Knocks():
		case <-timer.C:
		}
		timer.Stop()
	}
}

// locked runs f with the API server's state locked: the actors and the
// checker read and write the store directly.
func (s *sim) locked(f func()) {
	s.server.Locked(f)
}
