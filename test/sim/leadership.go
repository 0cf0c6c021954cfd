package sim

import (
	"fmt"
	"hash/fnv"
	"time"
)

// The controller's process as the simulation sees it: a leader that crashes
// or loses the API server, and a standby that takes over once the
// leader-election lease expires.

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
	s.server.hold(s.leader.name, true)
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
			s.server.hold(r.name, false)
		}
	}
	if s.leader == nil && !now.Before(s.nextLeaderAt) {
		r, err := s.startReplica()
		if err != nil {
			panic(err)
		}
		s.leader = r
		s.check.leaderStarted = now
	}
}

// nextLeadershipChange is when renewLeadership has something to do next.
func (s *sim) nextLeadershipChange() time.Time {
	switch r := s.leader; {
	case r == nil:
		return s.nextLeaderAt
	case !r.partitionedAt.IsZero():
		return earliest(r.healsAt, r.partitionedAt.Add(renewDeadline))
	}
	return time.Time{}
}

// faultOf decides a request's fault while a fault window is open.
func (s *sim) faultOf(c *call) fault {
	if !time.Now().Before(s.faultUntil) {
		return faultNone
	}
	switch s.faultMode {
	case faultUnavailable:
		return faultUnavailable
	case faultLostAnswer:
		if c.r.isWrite() && s.coin(c) {
			return faultLostAnswer
		}
	default:
		if s.coin(c) {
			return s.faultMode
		}
	}
	return faultNone
}

// coin flips a coin for a request, the same for the same request at the
// same instant whatever the order requests arrive in.
func (s *sim) coin(c *call) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s %s %s %s %d", s.seed, c.client, c.req.Method, c.req.URL, c.r.body, time.Now().UnixNano())
	return h.Sum64()%2 == 0
}

// earliest is the earliest of instants; zero ones are none.
func earliest(times ...time.Time) time.Time {
	var e time.Time
	for _, t := range times {
		if !t.IsZero() && (e.IsZero() || t.Before(e)) {
			e = t
		}
	}
	return e
}
