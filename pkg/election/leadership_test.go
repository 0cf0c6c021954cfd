package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
)

// newTestLeadership joins an election on leases with a fake clock; stop is
// the process's SIGTERM.
func newTestLeadership(t *testing.T, name string, leases *fakeLeases) (l *Leadership, clk *clocktesting.FakeClock, stop context.CancelFunc) {
	t.Helper()
	clk = clocktesting.NewFakeClock(start)
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	l, err := newLeadership(ctx, Config{
		Leases: leases, Namespace: testNamespace, Name: name, Identity: me,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod, Clock: clk,
	})
	require.NoError(t, err)
	return l, clk, stop
}

// runInBackground runs the leadership; the channel has Run's result.
func runInBackground(l *Leadership, work func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Run(work) }()
	return done
}

// A standby is ready once it knows who leads; its health does not depend
// on the lease.
func TestAStandbysChecks(t *testing.T) {
	leases := newFakeLeases(&record{holder: other, durationSeconds: 15, renew: start})
	l, clk, stop := newTestLeadership(t, "standby", leases)
	assert.EqualError(t, l.Ready(), "no leader known yet")
	assert.NoError(t, l.Healthy())

	done := runInBackground(l, func(context.Context) error {
		t.Error("a standby does no work")
		return nil
	})
	require.Eventually(t, func() bool { return l.Ready() == nil }, 5*time.Second, time.Millisecond, "another replica leads")
	// The other replica renews; this one last looked an hour ago.
	leases.set(record{holder: other, durationSeconds: 15, renew: start.Add(time.Hour)})
	clk.Step(time.Hour)
	assert.NoError(t, l.Healthy(), "a standby is not held to the lease")

	stop()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("a standby kept running after SIGTERM")
	}
}

// On SIGTERM the work drains while the lease is still held, and the lease
// is released once it has.
func TestTheWorkDrainsBeforeTheLeaseIsReleased(t *testing.T) {
	leases := newFakeLeases(nil)
	l, _, stop := newTestLeadership(t, "drain", leases)
	working := make(chan struct{})
	var heldWhileDraining string
	done := runInBackground(l, func(ctx context.Context) error {
		close(working)
		<-ctx.Done()
		heldWhileDraining = leases.record().holder
		return context.Canceled
	})
	select {
	case <-working:
	case <-time.After(5 * time.Second):
		t.Fatal("never led")
	}
	assert.NoError(t, l.Ready())
	_, err := l.WritesUntil()
	assert.NoError(t, err)

	stop()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled, "Run returns the work's error")
	case <-time.After(5 * time.Second):
		t.Fatal("never stopped")
	}
	assert.Equal(t, me, heldWhileDraining)
	assert.Empty(t, leases.record().holder, "released")
}

// Work that ends on its own while leading releases the lease, and Run
// returns its error; the process is not ended as for a lost lease.
func TestWorkThatEndsReleasesTheLease(t *testing.T) {
	leases := newFakeLeases(nil)
	l, _, _ := newTestLeadership(t, "work-ends", leases)
	failed := errors.New("failed")
	select {
	case err := <-runInBackground(l, func(context.Context) error { return failed }):
		assert.ErrorIs(t, err, failed)
	case <-time.After(5 * time.Second):
		t.Fatal("never stopped")
	}
	assert.Empty(t, leases.record().holder, "released")
}

// A replica alone leads at once, always, and may write without end.
func TestAReplicaAloneLeads(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	l := Alone(ctx)
	assert.NoError(t, l.Ready())
	assert.NoError(t, l.Healthy())
	until, err := l.WritesUntil()
	assert.NoError(t, err)
	assert.True(t, until.IsZero())
	ran := false
	assert.NoError(t, l.Run(func(workCtx context.Context) error {
		ran = workCtx == ctx
		return nil
	}))
	assert.True(t, ran, "the work runs with the process's context")
}

// The election's lease client has a rate limiter of its own, whatever the
// config it is built from carries.
func TestTheLeasesHaveARateLimiterOfTheirOwn(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	leases, err := leasesOver(&rest.Config{Host: "https://example.invalid", RateLimiter: shared}, testNamespace)
	require.NoError(t, err)
	limiter := leases.(interface{ GetClient() rest.Interface }).GetClient().GetRateLimiter()
	assert.NotNil(t, limiter)
	assert.NotSame(t, shared, limiter)
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	assert.NoError(t, o.Validate())
	o.RetryPeriod = o.RenewDeadline
	assert.Error(t, o.Validate())
	o.LeaderElect = false
	assert.NoError(t, o.Validate(), "no election, no timings")
}
