package election

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// An attempt, after the clock moved on and maybe another replica wrote.
type attempt struct {
	advance time.Duration
	// by, when set, writes the lease as that holder before the attempt,
	// renewed at the moment; touch changes its metadata alone.
	by    string
	touch bool
	// failing verbs fail during the attempt.
	failing []string

	want        bool
	holder      string
	transitions int32
	calls       []string
}

var longAgo = start.Add(-time.Hour)

// tryAcquireCases are a lease's first record and the attempts made on it.
var tryAcquireCases = []struct {
	name     string
	initial  *record
	attempts []attempt
}{{
	name: "acquire when free",
	attempts: []attempt{
		{want: true, holder: me, calls: []string{"get", "create"}},
	},
}, {
	name:    "acquire a released lease",
	initial: &record{durationSeconds: 1, transitions: 3, renew: longAgo},
	attempts: []attempt{
		{want: true, holder: me, transitions: 4, calls: []string{"get", "update"}},
	},
}, {
	// The record says it expired an hour ago: only its not changing
	// for the lease duration on this replica's clock counts.
	name:    "wait while another holds, take over once it expired by local observation",
	initial: &record{holder: other, durationSeconds: 15, transitions: 2, acquire: longAgo, renew: longAgo},
	attempts: []attempt{
		{want: false, holder: other, transitions: 2, calls: []string{"get"}},
		{advance: leaseDuration - time.Millisecond, want: false, holder: other, transitions: 2, calls: []string{"get"}},
		{advance: time.Millisecond, want: true, holder: me, transitions: 3, calls: []string{"get", "update"}},
	},
}, {
	name:    "a renewal by the holder restarts the wait",
	initial: &record{holder: other, durationSeconds: 15},
	attempts: []attempt{
		{want: false, holder: other},
		{advance: 10 * time.Second, by: other, want: false, holder: other},
		{advance: 10 * time.Second, want: false, holder: other},
		{advance: 5 * time.Second, want: true, holder: me, transitions: 1},
	},
}, {
	name:    "the holder's own duration counts",
	initial: &record{holder: other, durationSeconds: 60},
	attempts: []attempt{
		{want: false, holder: other},
		{advance: 59 * time.Second, want: false, holder: other},
		{advance: time.Second, want: true, holder: me, transitions: 1},
	},
}, {
	name: "renew on the lease last written, without reading it",
	attempts: []attempt{
		{want: true, holder: me},
		{advance: retryPeriod, want: true, holder: me, calls: []string{"update"}},
		{advance: retryPeriod, want: true, holder: me, calls: []string{"update"}},
	},
}, {
	name: "a renewal that conflicts reads the lease and renews",
	attempts: []attempt{
		{want: true, holder: me},
		{advance: retryPeriod, touch: true, want: true, holder: me, calls: []string{"update", "get", "update"}},
	},
}, {
	name: "a lease another took meanwhile is left to it",
	attempts: []attempt{
		{want: true, holder: me},
		{advance: retryPeriod, by: other, want: false, holder: other, transitions: 1, calls: []string{"update", "get"}},
	},
}, {
	name: "a renewal that fails",
	attempts: []attempt{
		{want: true, holder: me},
		{advance: retryPeriod, failing: []string{"update"}, want: false, holder: me, calls: []string{"update", "get", "update"}},
		{advance: retryPeriod, want: true, holder: me, calls: []string{"update"}},
	},
}, {
	name: "a lease that cannot be read is not taken",
	attempts: []attempt{
		{failing: []string{"get"}, want: false, calls: []string{"get"}},
	},
}, {
	name: "a create that fails",
	attempts: []attempt{
		{failing: []string{"create"}, want: false, calls: []string{"get", "create"}},
		{advance: retryPeriod, want: true, holder: me},
	},
}}

func TestTryAcquireOrRenew(t *testing.T) {
	for _, tc := range tryAcquireCases {
		t.Run(tc.name, func(t *testing.T) {
			leases := newFakeLeases(tc.initial)
			e, clk := newTestElector(t, "try", leases, Callbacks{})
			for i, a := range tc.attempts {
				a.check(t, i, e, clk, leases)
			}
		})
	}
}

// check makes the attempt and checks what it did.
func (a attempt) check(t *testing.T, i int, e *Elector, clk *clocktesting.FakeClock, leases *fakeLeases) {
	t.Helper()
	clk.Step(a.advance)
	if a.by != "" {
		held := leases.record()
		if held.holder != a.by {
			held.transitions++
		}
		leases.set(record{holder: a.by, durationSeconds: 15, transitions: held.transitions, renew: clk.Now()})
	}
	if a.touch {
		leases.touch()
	}
	leases.failing(a.failing...)
	leases.takeCalls()
	assert.Equal(t, a.want, e.tryAcquireOrRenew(context.Background()), "attempt %d", i)
	calls := leases.takeCalls()
	leases.failing()
	if a.calls != nil {
		assert.Equal(t, a.calls, calls, "attempt %d", i)
	}
	got := leases.record()
	assert.Equal(t, a.holder, got.holder, "attempt %d: the holder", i)
	assert.Equal(t, a.transitions, got.transitions, "attempt %d: the transitions", i)
	assert.Equal(t, a.holder == me, e.IsLeader(), "attempt %d: leads", i)
	if a.want {
		assert.Equal(t, int32(15), got.durationSeconds)
		assert.True(t, got.renew.Equal(clk.Now()), "attempt %d: renewed now", i)
	}
}

// A renewal keeps the time the lease was acquired.
func TestARenewalKeepsTheAcquireTime(t *testing.T) {
	leases := newFakeLeases(nil)
	e, clk := newTestElector(t, "acquire-time", leases, Callbacks{})
	require.True(t, e.tryAcquireOrRenew(context.Background()))
	clk.Step(retryPeriod)
	require.True(t, e.tryAcquireOrRenew(context.Background()))
	leases.touch()
	clk.Step(retryPeriod)
	require.True(t, e.tryAcquireOrRenew(context.Background()), "the slow path")
	got := leases.record()
	assert.True(t, got.acquire.Equal(start), "acquired at the start, not %s", got.acquire)
	assert.True(t, got.renew.Equal(clk.Now()))
}

func TestWritesUntil(t *testing.T) {
	leases := newFakeLeases(nil)
	e, clk := newTestElector(t, "writes-until", leases, Callbacks{})
	ctx := context.Background()
	mayWrite := func() error {
		_, err := e.WritesUntil()
		return err
	}
	assert.Error(t, mayWrite(), "not acquired yet")
	require.True(t, e.tryAcquireOrRenew(ctx))
	until, err := e.WritesUntil()
	require.NoError(t, err, "acquired")
	assert.Equal(t, clk.Now().Add(renewDeadline), until, "until the renew deadline after the renewal")

	clk.Step(retryPeriod)
	leases.failing("update")
	require.False(t, e.tryAcquireOrRenew(ctx))
	assert.ErrorIs(t, mayWrite(), ErrRenewalFailed, "the first failed renewal stops the writes")

	leases.failing()
	clk.Step(retryPeriod)
	require.True(t, e.tryAcquireOrRenew(ctx))
	assert.NoError(t, mayWrite(), "renewed again")

	leases.failing("get", "update")
	clk.Step(renewDeadline - time.Millisecond)
	assert.NoError(t, mayWrite())
	clk.Step(time.Millisecond)
	assert.Error(t, mayWrite(), "no renewal for the renew deadline: a standby may take over soon")

	leases.failing()
	require.True(t, e.tryAcquireOrRenew(ctx))
	require.NoError(t, mayWrite())
	leases.set(record{holder: other, durationSeconds: 15, renew: clk.Now()})
	clk.Step(retryPeriod)
	require.False(t, e.tryAcquireOrRenew(ctx))
	assert.Error(t, mayWrite(), "another holds the lease")
}

// The renewal's deadline counts from when it began, not from its answer:
// a standby's expiry cannot start before the write was sent.
func TestWritesUntilCountsFromTheRenewalsStart(t *testing.T) {
	leases := newFakeLeases(nil)
	e, clk := newTestElector(t, "slow-renewal", leases, Callbacks{})
	require.True(t, e.tryAcquireOrRenew(context.Background()))
	slow := &slowLeases{fakeLeases: leases, step: func() { clk.Step(3 * time.Second) }}
	e.cfg.Leases = slow
	clk.Step(retryPeriod)
	began := clk.Now()
	require.True(t, e.tryAcquireOrRenew(context.Background()))
	until, err := e.WritesUntil()
	require.NoError(t, err)
	assert.Equal(t, began.Add(renewDeadline), until)
}

// slowLeases lets the clock run while an update is in flight.
type slowLeases struct {
	*fakeLeases
	step func()
}

func (s *slowLeases) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	s.step()
	return s.fakeLeases.Update(ctx, lease, opts)
}

func TestCheck(t *testing.T) {
	tolerance := renewDeadline
	leases := newFakeLeases(&record{holder: other, durationSeconds: 15})
	e, clk := newTestElector(t, "healthz", leases, Callbacks{})
	ctx := context.Background()
	require.False(t, e.tryAcquireOrRenew(ctx))
	clk.Step(time.Hour)
	assert.NoError(t, e.Check(tolerance), "a standby is healthy however old its observation")

	leases.set(record{})
	require.True(t, e.tryAcquireOrRenew(ctx))
	assert.NoError(t, e.Check(tolerance), "a leader that just renewed")
	clk.Step(leaseDuration + tolerance)
	assert.NoError(t, e.Check(tolerance), "within the tolerance after the lease ran out")
	clk.Step(time.Millisecond)
	assert.Error(t, e.Check(tolerance), "a leader stuck past the lease and the tolerance")
	require.True(t, e.tryAcquireOrRenew(ctx))
	assert.NoError(t, e.Check(tolerance), "renewed again")
}

func TestNewRefusesInconsistentDurations(t *testing.T) {
	base := Config{
		Leases: newFakeLeases(nil), Name: "checks", Identity: me,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Callbacks: Callbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}
	_, err := New(base)
	require.NoError(t, err)
	for name, change := range map[string]func(*Config){
		"no identity":   func(c *Config) { c.Identity = "" },
		"no lease name": func(c *Config) { c.Name = "" },
		"a lease shorter than a second": func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
		},
		"a renew deadline as long as the lease": func(c *Config) { c.RenewDeadline = c.LeaseDuration },
		"a retry period near the deadline":      func(c *Config) { c.RetryPeriod = 9 * time.Second },
		"no retry period":                       func(c *Config) { c.RetryPeriod = 0 },
		"no OnStartedLeading":                   func(c *Config) { c.Callbacks.OnStartedLeading = nil },
	} {
		cfg := base
		change(&cfg)
		_, err := New(cfg)
		assert.Error(t, err, name)
	}
}
