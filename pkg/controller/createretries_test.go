package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

// A node whose creates keep failing is retried at doubling intervals up to
// 15 s; a create that succeeds, a NodeHealthCheck deleted, or a back-off
// long over forgets it, so that what is kept is of nodes failing now.
func TestCreateRetriesBackOff(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(t0.Time)
	r := newCreateRetries(clock)
	assert.Nil(t, r.Pending("workers"))

	var intervals []time.Duration
	for range 6 {
		r.Failed("workers", "worker-1")
		at := r.Pending("workers")["worker-1"]
		intervals = append(intervals, at.Sub(clock.Now()))
		clock.SetTime(at)
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 15 * time.Second}, intervals)
	assert.Nil(t, r.Pending("others"), "by NodeHealthCheck")

	r.Created("workers", "worker-1")
	assert.Nil(t, r.Pending("workers"), "a create that succeeded forgets the failures")

	r.Failed("workers", "worker-1")
	clock.SetTime(clock.Now().Add(30 * time.Second))
	assert.Empty(t, r.Pending("workers"), "a back-off long over is forgotten")
	r.Failed("workers", "worker-1")
	assert.Equal(t, clock.Now().Add(time.Second), r.Pending("workers")["worker-1"], "a node that fails again starts afresh")

	r.Forget("workers")
	assert.Nil(t, r.Pending("workers"))
}

// The next retry is one to come: a retry due is the plan's to make, and
// requeued at once it would spin until the back-off lapses.
func TestCreateRetriesNextIsToCome(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(t0.Time)
	r := newCreateRetries(clock)
	assert.True(t, r.Next("workers").IsZero())
	r.Failed("workers", "worker-1")
	clock.SetTime(clock.Now().Add(500 * time.Millisecond))
	r.Failed("workers", "worker-2")
	assert.Equal(t, t0.Add(time.Second), r.Next("workers"))
	clock.SetTime(t0.Add(time.Second))
	assert.Equal(t, t0.Add(1500*time.Millisecond), r.Next("workers"), "worker-1's retry is due")
	clock.SetTime(t0.Add(2 * time.Second))
	assert.True(t, r.Next("workers").IsZero())
}
