package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// errRenewalFailed is why a leader whose last renewal failed does not write.
var errRenewalFailed = errors.New("the last renewal of the leader-election lease failed")

// renewalTracker wraps the leader-election lock and remembers when this
// replica last renewed its lease. A leader whose renewals fail stays leader
// for up to the renew deadline, while a standby may take the lease once it
// expires; the workers therefore write only while the last renewal succeeded
// and is younger than the renew deadline, which is shorter than the lease.
type renewalTracker struct {
	resourcelock.Interface
	clock clock.PassiveClock
	// validFor is how long after a renewal this replica may still write.
	validFor time.Duration

	mu      sync.Mutex
	renewed time.Time
	failed  bool
}

func (t *renewalTracker) Create(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := t.Interface.Create(ctx, record)
	t.record(record, err)
	return err
}

func (t *renewalTracker) Update(ctx context.Context, record resourcelock.LeaderElectionRecord) error {
	err := t.Interface.Update(ctx, record)
	t.record(record, err)
	return err
}

// record notes an attempt to take or renew the lease; a release, which
// writes an empty holder, is none.
func (t *renewalTracker) record(record resourcelock.LeaderElectionRecord, err error) {
	if record.HolderIdentity != t.Identity() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failed = true
		return
	}
	t.failed, t.renewed = false, t.clock.Now()
}

// writesUntil tells until when this replica may write: the renew deadline
// after its last renewal, while that succeeded; after it, a standby may
// take the lease over once it expires.
func (t *renewalTracker) writesUntil() (time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch age := t.clock.Since(t.renewed); {
	case t.renewed.IsZero():
		return time.Time{}, errors.New("the leader-election lease was never acquired")
	case t.failed:
		return time.Time{}, errRenewalFailed
	case age >= t.validFor:
		return time.Time{}, fmt.Errorf("the leader-election lease was last renewed %s ago, longer than the renew deadline %s", age.Round(time.Millisecond), t.validFor)
	}
	return t.renewed.Add(t.validFor), nil
}
