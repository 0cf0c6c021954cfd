package election_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
)

// The controller's timings, which are client-go's defaults too, for both
// kinds. The bubble's clock makes them free.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
	// perKind candidates of each kind run, once the first leads.
	perKind = 3
)

// The bounds both electors' algorithm sets, answers taking no time in the
// bubble.
const (
	// maxPause is the longest pause between a candidate's attempts to take
	// the lease: both jitter the retry period by up to JitterFactor more
	// (wait.Jitter), a bound never reached.
	maxPause = retryPeriod + time.Duration(election.JitterFactor*float64(retryPeriod))
	// givesUpWithin is how long after its last successful renewal a leader
	// whose renewals fail leads on: its next renewal is due a retry period
	// later, and it retries it for the renew deadline.
	givesUpWithin = retryPeriod + renewDeadline
	// takesOverWithin is how long after the leader's last write a standby
	// takes a lease that lapses, at the latest: it sees the write at its
	// next attempt, within a pause; counts the lease's duration from then;
	// and takes the lease at its first attempt after, within another pause.
	// No standby takes it sooner than the lease's duration after the write,
	// which it cannot have seen before it landed.
	takesOverWithin = leaseDuration + 2*maxPause
	// releasedTakenWithin: a released lease has no holder, and a standby
	// takes it at its next attempt.
	releasedTakenWithin = maxPause
)

// event is what befalls each leader in turn.
type event struct {
	// stop cancels the leader's Run, as a SIGTERM does; else the leader's
	// link to the API server breaks with fault for outage.
	stop   bool
	fault  fault
	outage time.Duration
}

func (e event) String() string {
	if e.stop {
		return "stop"
	}
	return fmt.Sprintf("%v outage of %v", e.fault, e.outage)
}

// A leader's link that breaks for longer than this loses the lease.
const longOutage = 2 * leaseDuration

type scenario struct {
	name string
	// rounds is how many leaders in turn the event hands the lease from;
	// none for an event the leader rides out.
	rounds int
	event  event
	// releasing are the kinds that release the lease when stopped.
	releasing map[kind]bool
	skewed    bool
}

var bothRelease = map[kind]bool{ours: true, clientGos: true}

var scenarios = []scenario{
	{name: "steady"},
	{name: "an outage shorter than the renew deadline", event: event{fault: refused, outage: renewDeadline / 2}},
	{name: "a hanging outage shorter than the renew deadline", event: event{fault: hanging, outage: renewDeadline / 2}},
	{name: "renewals refused", rounds: 3, event: event{fault: refused, outage: longOutage}, releasing: bothRelease},
	// client-go's elector, releasing on cancel, also tries to release a
	// lease it lost, and ends its leader's context only after: while the
	// API server does not answer, a renew deadline after it gave up, well
	// after a standby of either kind took the lapsed lease. Ours lets a
	// lost lease lapse.
	{name: "renewals hanging", rounds: 3, event: event{fault: hanging, outage: longOutage}, releasing: map[kind]bool{ours: true}},
	{name: "renewals landing unanswered", rounds: 3, event: event{fault: answerLost, outage: longOutage}, releasing: bothRelease},
	{name: "stopped, releasing", rounds: 3, event: event{stop: true}, releasing: bothRelease},
	{name: "stopped, letting the lease lapse", rounds: 3, event: event{stop: true}},
	{name: "skewed clocks, renewals refused", rounds: 3, event: event{fault: refused, outage: longOutage}, releasing: bothRelease, skewed: true},
	{name: "skewed clocks, stopped, letting the lease lapse", rounds: 3, event: event{stop: true}, skewed: true},
	{name: "skewed clocks, stopped, releasing", rounds: 3, event: event{stop: true}, releasing: bothRelease, skewed: true},
}

// Ours and client-go's electors, several of each on one Lease, on the
// bubble's clock: at no instant do two lead, and when the leader stops or
// its renewals fail, another takes over within the algorithm's bound. Each
// scenario runs twice, either kind leading first; the first hand-over
// goes to the other kind.
func TestInteropOneLeaderAtATime(t *testing.T) {
	led := map[kind]int{}
	handOvers := map[string]int{}
	ran := 0
	for _, s := range scenarios {
		for _, first := range []kind{ours, clientGos} {
			t.Run(s.name+"/"+string(first)+" first", func(t *testing.T) {
				var all []term
				synctest.Test(t, func(t *testing.T) { all = runScenario(t, s, first) })
				ran++
				for i, term := range all {
					led[term.who.kind]++
					if i > 0 && all[i-1].who.kind != term.who.kind {
						handOvers[string(all[i-1].who.kind)+" → "+string(term.who.kind)]++
					}
				}
			})
		}
	}
	if ran < 2*len(scenarios) {
		return // -run picked some: the totals are theirs.
	}
	t.Logf("terms: %v; hand-overs between the kinds: %v", led, handOvers)
	assert.Positive(t, led[ours], "ours led")
	assert.Positive(t, led[clientGos], "client-go's led")
	assert.Positive(t, handOvers["ours → client-go"], "client-go's took the lease from ours")
	assert.Positive(t, handOvers["client-go → ours"], "ours took the lease from client-go's")
}

// runScenario runs s in a bubble, first's candidate leading first, and
// returns the terms.
func runScenario(t *testing.T, s scenario, first kind) []term {
	f := newFleet(t, s.releasing, s.skewed)
	t.Cleanup(f.stopAll)
	f.start(first)
	leader := f.terms.next(time.Now(), time.Now().Add(maxPause))
	require.NotNil(t, leader, "a lone candidate did not take a free lease")
	require.Equal(t, first, leader.who.kind)
	if s.rounds == 0 {
		f.fill(ours)
		f.fill(clientGos)
		f.ridesOut(t, s.event)
	} else {
		// Only the other kind stands by: the first hand-over is to it.
		f.fill(first.other())
		for round := range s.rounds {
			next := f.handOver(t, s.event)
			if round == 0 {
				assert.Equal(t, first.other(), next.who.kind, "the first hand-over")
			}
			f.fill(ours)
			f.fill(clientGos)
		}
	}
	f.stopAll()
	f.requireOneLeaderAtATime(t)
	all, _ := f.terms.snapshot()
	return all
}

// requireOneLeaderAtATime fails at once when two candidates led at once:
// what follows would only tell of its consequences.
func (f *fleet) requireOneLeaderAtATime(t *testing.T) {
	_, overlaps := f.terms.snapshot()
	require.Empty(t, overlaps, "two candidates led at once")
}

// ridesOut checks that the leader keeps leading through e, an outage
// shorter than the renew deadline (or none).
func (f *fleet) ridesOut(t *testing.T, e event) {
	leader := f.terms.leader()
	// The leader renews every retry period from its start, now: the outage
	// begins between two renewals.
	time.Sleep(leaseDuration + retryPeriod/3)
	if e.outage > 0 {
		leader.who.link.breakFor(e.fault, e.outage)
	}
	time.Sleep(10 * leaseDuration)
	f.requireOneLeaderAtATime(t)
	all, _ := f.terms.snapshot()
	assert.Len(t, all, 1, "a leader whose renewals failed for less than the renew deadline lost the lease")
	assert.Same(t, leader, f.terms.leader(), "%s still leads", leader.who)
}

// handOver befalls the leader with e and checks that another takes over
// within the bound, and never before the lease is released or lapsed.
func (f *fleet) handOver(t *testing.T, e event) *term {
	old := f.terms.leader()
	require.NotNil(t, old, "no one leads")
	// The leader renews every retry period from its start, which was now
	// or just before: the event falls between two renewals.
	time.Sleep(leaseDuration + retryPeriod/3)
	f.requireOneLeaderAtATime(t)
	at := time.Now()
	if e.stop {
		f.remove(old.who)
	} else {
		old.who.link.breakFor(e.fault, e.outage)
	}
	next := f.terms.next(at, at.Add(takesOverWithin+e.outage))
	f.requireOneLeaderAtATime(t)
	require.NotNil(t, next, "no one took the lease over within %v of %s's %v", takesOverWithin+e.outage, old.who, e)
	// The old term's end is recorded.
	synctest.Wait()
	ended := f.terms.ended(old)
	require.False(t, ended.IsZero(), "%s still leads beside %s, %v after its %v", old.who, next.who, time.Since(at), e)
	if e.stop && f.releasing[old.who.kind] {
		assert.WithinDuration(t, at, f.server.lastWrite(""), 0, "%s released the lease when stopped", old.who)
		assert.LessOrEqual(t, next.start.Sub(at), releasedTakenWithin,
			"%s took the lease %v after %s released it, past a pause between attempts", next.who, next.start.Sub(at), old.who)
	} else {
		lastWrite := f.server.lastWrite(old.who.name)
		assert.GreaterOrEqual(t, next.start.Sub(lastWrite), leaseDuration,
			"%s took %s's lease %v after its last write, before it lapsed", next.who, old.who, next.start.Sub(lastWrite))
		assert.LessOrEqual(t, next.start.Sub(lastWrite), takesOverWithin,
			"%s took %s's lease %v after its last write, past the lease's duration and two pauses", next.who, old.who, next.start.Sub(lastWrite))
	}
	if !e.stop {
		// Its last successful renewal was no later than the outage's start.
		assert.LessOrEqual(t, ended.Sub(at), givesUpWithin,
			"%s led %v into a %v, past a retry period and the renew deadline", old.who, ended.Sub(at), e)
		f.remove(old.who)
	}
	return next
}
