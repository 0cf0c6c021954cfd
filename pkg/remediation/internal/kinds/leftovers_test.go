package kinds

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A kind looked at for leftovers that may not be listed is dropped, not
// held back for a retry: a NodeHealthCheck that uses it once its role is
// granted watches it at once.
func TestALookedAtKindThatFailsIsWatchedAtOnceWhenUsed(t *testing.T) {
	f := newRoleFixture(t)
	f.denied.Store(true)
	f.informers.Look([]schema.GroupVersionResource{testGVR})
	require.Eventually(t, func() bool { return len(f.informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond, "stopped at its first 403")
	assert.Empty(t, f.informers.UnknownRemediations())

	f.denied.Store(false)
	f.informers.Use("granted", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return f.informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
}

// A kind looked at for leftovers that may not be listed is not read: what
// it holds is unknown, though it is no longer watched, until it syncs. It
// is tried again once its retry is due.
func TestAKindLookedAtThatCannotBeReadIsNotAllRead(t *testing.T) {
	f := newRoleFixture(t)
	informers, clock := f.informers, f.clock
	f.denied.Store(true)
	informers.Look([]schema.GroupVersionResource{testGVR})
	assert.False(t, informers.AllRead(), "looking")
	clock.SetTime(clock.Now().Add(WatchGrace))
	if r := informers.informer(testGVR); r != nil {
		informers.failed(testGVR, r, f.forbidden)
	}
	assert.Empty(t, informers.Running(), "stopped: no one uses it")
	assert.False(t, informers.AllRead(), "never read")

	f.denied.Store(false)
	informers.RetryUnread()
	assert.Empty(t, informers.Running(), "not before its retry is due")
	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.RetryUnread()
	require.Eventually(t, informers.AllRead, 10*time.Second, 10*time.Millisecond, "read once allowed")
	require.Eventually(t, func() bool { return len(informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond, "empty: stopped again")
}

// A kind looked at for leftovers that may not be listed is tried again
// while a deleted NodeHealthCheck's leases wait for every kind to be read
// (RetryUnread). No NodeHealthCheck uses it: its first failure concerns
// every one (they wait until what it holds is known), a retry that fails
// as it did concerns none.
func TestARetryOfAnUnusedKindThatFailsAgainConcernsNoOne(t *testing.T) {
	f := newRoleFixture(t)
	heard := &heardKinds{}
	f.informers.AddStateChangeHandler(heard.record)
	f.denied.Store(true)
	f.informers.Look([]schema.GroupVersionResource{testGVR})
	require.Eventually(t, func() bool { return heard.count() == 1 }, 10*time.Second, 10*time.Millisecond, "stopped at its first 403")
	assert.Nil(t, heard.last(), "the first failure concerns every NodeHealthCheck")

	for retry := 2; retry <= 3; retry++ {
		f.clock.SetTime(f.clock.Now().Add(RetryInterval))
		f.informers.RetryUnread()
		require.Eventually(t, func() bool { return heard.count() == retry }, 10*time.Second, 10*time.Millisecond, "stopped again at its 403")
		assert.NotNil(t, heard.last())
		assert.Empty(t, heard.last(), "a retry failing again concerns no NodeHealthCheck")
		assert.False(t, f.informers.AllRead())
	}
}
