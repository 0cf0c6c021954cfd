package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock succeeds or fails as told.
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *fakeLock) Identity() string                                                { return "me" }

func TestRenewalTrackerAllowsWritesOnlyWhileTheLeaseIsSurelyHeld(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	lock := &fakeLock{}
	tracker := &renewalTracker{Interface: lock, clock: clock, validFor: 10 * time.Second}
	ctx := context.Background()
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}

	mayWrite := func() error {
		_, err := tracker.writesUntil()
		return err
	}
	assert.Error(t, mayWrite(), "not acquired yet")
	assert.NoError(t, tracker.Create(ctx, mine))
	until, err := tracker.writesUntil()
	assert.NoError(t, err, "acquired")
	assert.Equal(t, clock.Now().Add(10*time.Second), until, "until the renew deadline after the renewal")

	lock.err = assert.AnError
	assert.Error(t, tracker.Update(ctx, mine))
	assert.ErrorIs(t, mayWrite(), errRenewalFailed, "the first failed renewal stops the writes")

	lock.err = nil
	clock.SetTime(clock.Now().Add(5 * time.Second))
	assert.NoError(t, tracker.Update(ctx, mine))
	assert.NoError(t, mayWrite(), "renewed again")

	clock.SetTime(clock.Now().Add(10*time.Second - time.Millisecond))
	assert.NoError(t, mayWrite())
	clock.SetTime(clock.Now().Add(time.Millisecond))
	assert.Error(t, mayWrite(), "no renewal for the renew deadline: a standby may take over soon")

	assert.NoError(t, tracker.Update(ctx, mine))
	assert.NoError(t, tracker.Update(ctx, resourcelock.LeaderElectionRecord{}), "the release")
	assert.NoError(t, mayWrite(), "a release is no renewal")
}
