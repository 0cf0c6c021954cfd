package election

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/legacyregistry"
	clocktesting "k8s.io/utils/clock/testing"
)

// running is an elector's Run in the background, with what its callbacks
// were told.
type running struct {
	e      *Elector
	clk    *clocktesting.FakeClock
	leases *fakeLeases
	cancel context.CancelFunc
	done   chan struct{}

	started chan context.Context
	stopped chan struct{}
	mu      sync.Mutex
	leaders []string
}

func runElector(t *testing.T, name string, initial *record) *running {
	t.Helper()
	r := &running{leases: newFakeLeases(initial), done: make(chan struct{}),
		started: make(chan context.Context, 1), stopped: make(chan struct{})}
	r.e, r.clk = newTestElector(t, name, r.leases, Callbacks{
		OnStartedLeading: func(ctx context.Context) { r.started <- ctx },
		OnStoppedLeading: func() { close(r.stopped) },
		OnNewLeader: func(identity string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.leaders = append(r.leaders, identity)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.e.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// waitIdle waits until the elector waits on n timers, having made calls
// lease calls of verb.
func (r *running) waitIdle(t *testing.T, n int, verb string, calls int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.clk.Waiters() == n && r.leases.count(verb) == calls },
		5*time.Second, time.Millisecond, "%d timers after %d %s", n, calls, verb)
}

func (r *running) newLeaders() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.leaders...)
}

func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "leader_election_master_status" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == name {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no leader_election_master_status{name=%q}", name)
	return 0
}

func TestRunAcquiresRenewsAndReleasesOnCancel(t *testing.T) {
	r := runElector(t, "release", nil)
	var leading context.Context
	select {
	case leading = <-r.started:
	case <-time.After(5 * time.Second):
		t.Fatal("never led")
	}
	r.waitIdle(t, 1, "create", 1)
	assert.True(t, r.e.IsLeader())
	assert.Equal(t, 1.0, gauge(t, "release"))

	for i := 1; i <= 3; i++ {
		r.clk.Step(retryPeriod)
		r.waitIdle(t, 1, "update", i)
	}
	assert.True(t, r.leases.record().renew.Equal(r.clk.Now()), "renewed every retry period")
	require.NoError(t, leading.Err())

	r.cancel()
	<-r.done
	<-r.stopped
	assert.Error(t, leading.Err(), "leading ended")
	released := r.leases.record()
	assert.Empty(t, released.holder, "released")
	assert.Equal(t, int32(1), released.durationSeconds)
	assert.Equal(t, int32(0), released.transitions)
	assert.False(t, r.e.IsLeader())
	_, err := r.e.WritesUntil()
	assert.Error(t, err, "no writes after the release")
	assert.Equal(t, 0.0, gauge(t, "release"))
	assert.Equal(t, []string{me}, r.newLeaders(), "a release names no new leader")
}

func TestRunWaitsWhileAnotherHoldsThenTakesOver(t *testing.T) {
	r := runElector(t, "take-over", &record{holder: other, durationSeconds: 15, renew: start.Add(-time.Hour)})
	r.waitIdle(t, 1, "get", 1)
	assert.Equal(t, other, r.e.GetLeader())
	assert.Equal(t, 0.0, gauge(t, "take-over"))
	for i := 2; i <= 8; i++ {
		r.clk.Step(retryPeriod)
		r.waitIdle(t, 1, "get", i)
		require.False(t, r.e.IsLeader(), "%s after the first look", r.clk.Since(start))
	}
	r.clk.Step(retryPeriod)
	select {
	case <-r.started:
	case <-time.After(5 * time.Second):
		t.Fatal("never took over")
	}
	assert.Equal(t, 16*time.Second, r.clk.Since(start), "once the lease ran out on this clock")
	assert.Equal(t, int32(1), r.leases.record().transitions)
	assert.Eventually(t, func() bool { return len(r.newLeaders()) == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{other, me}, r.newLeaders())
}

// A leader whose renewals fail stops writing at the first failure, gives
// up once a renewal has not succeeded within the renew deadline, and lets
// the lease lapse rather than release it beside work that may still run.
func TestRunGivesUpAfterTheRenewDeadline(t *testing.T) {
	r := runElector(t, "give-up", nil)
	leading := <-r.started
	r.waitIdle(t, 1, "create", 1)
	r.leases.failing("get", "update")
	r.clk.Step(retryPeriod)
	// The round's deadline and the pause before its next attempt.
	r.waitIdle(t, 2, "update", 1)
	_, err := r.e.WritesUntil()
	assert.ErrorIs(t, err, ErrRenewalFailed)
	for i := 2; i <= 5; i++ {
		r.clk.Step(retryPeriod)
		r.waitIdle(t, 2, "update", i)
	}
	select {
	case <-r.done:
		t.Fatal("gave up before the renew deadline")
	default:
	}
	r.clk.Step(retryPeriod)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("never gave up")
	}
	<-r.stopped
	assert.Equal(t, renewDeadline+retryPeriod, r.clk.Since(start), "the deadline ran from the round's start: the create's start and a retry period")
	assert.Error(t, leading.Err())
	assert.Equal(t, me, r.leases.record().holder, "not released")
	_, err = r.e.WritesUntil()
	assert.Error(t, err)
	assert.Equal(t, 0.0, gauge(t, "give-up"))
}

// A renewal's slow answer does not lengthen the term: a standby counts the
// lease from a change it saw, no earlier than the write's start, so the
// leader gives up the renew deadline after its next renewal was due,
// counted from that start. Counted from the answer, as client-go does, the
// term would run past the standbys' count of the lease.
func TestASlowRenewalAnswerDoesNotLengthenTheTerm(t *testing.T) {
	r := runElector(t, "slow-answer", nil)
	leading := <-r.started
	r.waitIdle(t, 1, "create", 1)
	const answer = 4 * time.Second
	r.leases.answerLate(r.clk, answer)
	r.clk.Step(retryPeriod)
	r.waitIdle(t, 1, "update", 1)
	began := start.Add(retryPeriod)
	r.leases.failing("get", "update")
	for i := 2; ; i++ {
		r.clk.Step(retryPeriod)
		require.Eventually(t, func() bool {
			select {
			case <-r.done:
				return true
			default:
				return r.clk.Waiters() == 2 && r.leases.count("update") == i
			}
		}, 5*time.Second, time.Millisecond, "a failed renewal %d or the end", i)
		if leading.Err() != nil {
			break
		}
		require.Less(t, i, 20, "never gave up")
	}
	<-r.done
	assert.Equal(t, retryPeriod+renewDeadline, r.clk.Since(began), "the deadline ran from the renewal's start")
	assert.Less(t, r.clk.Since(began), leaseDuration, "the term ended before a standby that saw the renewal at its start could take over")
}

// A renewal that fails and then succeeds within the deadline keeps leading.
func TestRunKeepsLeadingThroughAShortFailure(t *testing.T) {
	r := runElector(t, "short-failure", nil)
	leading := <-r.started
	r.waitIdle(t, 1, "create", 1)
	r.leases.failing("update")
	r.clk.Step(retryPeriod)
	r.waitIdle(t, 2, "update", 2)
	r.leases.failing()
	r.clk.Step(retryPeriod)
	r.waitIdle(t, 1, "update", 3)
	until, err := r.e.WritesUntil()
	require.NoError(t, err)
	assert.Equal(t, r.clk.Now().Add(renewDeadline), until)
	assert.NoError(t, leading.Err())
}

// A candidate stopped before it led writes nothing.
func TestRunStoppedBeforeLeading(t *testing.T) {
	r := runElector(t, "never-led", &record{holder: other, durationSeconds: 15})
	r.waitIdle(t, 1, "get", 1)
	r.cancel()
	<-r.done
	<-r.stopped
	assert.Empty(t, r.started)
	assert.Zero(t, r.leases.count("update")+r.leases.count("create"))
	assert.Equal(t, other, r.leases.record().holder)
}
