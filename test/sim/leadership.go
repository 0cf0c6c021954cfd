package sim

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The controller's process as the simulation sees it: a leader that crashes
// or loses the API server, and a standby that takes over once the
// leader-election lease expires; and what the world tells the API server
// and the checker of it: each request's fault, whether the cluster is
// calm, and which replica leads.

// crash kills the leader's process; a standby takes over once the lease the
// dead process held has expired.
func (s *sim) crash() {
	if s.leader == nil {
		return
	}
	s.stop(s.leader)
	s.leader = nil
	s.nextLeaderAt = time.Now().Add(leaderLeaseDuration)
}

// partition cuts the leader off the API server for d: its requests wait,
// and land when it heals, unless their deadline passed. A leader that cannot
// renew within the renew deadline exits.
func (s *sim) partition(d time.Duration) {
	if s.leader == nil || !s.leader.partitionedAt.IsZero() {
		return
	}
	s.leader.partitionedAt = time.Now()
	s.leader.healsAt = time.Now().Add(d)
	s.server.Hold(s.leader.name, true)
}

// renewLeadership plays leader election: a partitioned leader heals or,
// past its renew deadline, exits; a standby starts leading once the lease
// is free.
func (s *sim) renewLeadership() {
	now := time.Now()
	if r := s.leader; r != nil && !r.partitionedAt.IsZero() {
		switch {
		case !now.Before(r.partitionedAt.Add(renewDeadline)):
			s.stop(r)
			s.leader = nil
			s.nextLeaderAt = r.partitionedAt.Add(leaderLeaseDuration)
		case !now.Before(r.healsAt):
			r.partitionedAt = time.Time{}
			s.server.Hold(r.name, false)
		}
	}
	if s.leader == nil && !now.Before(s.nextLeaderAt) {
		r, err := s.startReplica()
		if err != nil {
			panic(err)
		}
		s.leader = r
		s.check.LeaderStarted(now)
	}
}

// nextLeadershipChange is when renewLeadership has something to do next.
func (s *sim) nextLeadershipChange() time.Time {
	switch r := s.leader; {
	case r == nil:
		return s.nextLeaderAt
	case !r.partitionedAt.IsZero():
		return cluster.Earliest(r.healsAt, r.partitionedAt.Add(renewDeadline))
	}
	return time.Time{}
}

// faultOf decides a request's fault while a fault window is open.
func (s *sim) faultOf(c *apiserver.Call) apiserver.Fault {
	if !time.Now().Before(s.faultUntil) {
		return apiserver.FaultNone
	}
	switch s.faultMode {
	case apiserver.FaultUnavailable:
		return apiserver.FaultUnavailable
	case apiserver.FaultLostAnswer:
		if c.IsWrite() && s.coin(c) {
			return apiserver.FaultLostAnswer
		}
	default:
		if s.coin(c) {
			return s.faultMode
		}
	}
	return apiserver.FaultNone
}

// coin flips a coin for a request, the same for the same request at the
// same instant whatever the order requests arrive in.
func (s *sim) coin(c *apiserver.Call) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s %s %s %s %d", s.seed, c.Client, c.HTTP.Method, c.HTTP.URL, c.Body, time.Now().UnixNano())
	return h.Sum64()%2 == 0
}

// calm tells whether nothing outside the controller slows it now: a leader
// runs and reaches the API server, which answers every request, and every
// watch delivers at once. The state is locked.
func (s *sim) calm() bool {
	now := time.Now()
	watches := s.server.Watches()
	if s.leader == nil || !s.leader.partitionedAt.IsZero() || now.Before(s.faultUntil) || now.Before(watches.DelayUntil) {
		return false
	}
	return !watches.Stalled
}

// leaderName is the leading replica's client name; "" while none runs.
func (s *sim) leaderName() string {
	if s.leader == nil {
		return ""
	}
	return s.leader.name
}
