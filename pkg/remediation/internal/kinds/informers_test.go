package kinds

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// heardKinds records the kinds whose informer synced or failed.
type heardKinds struct {
	mu    sync.Mutex
	kinds []schema.GroupVersionResource
	// users are, for each change heard, the NodeHealthChecks it concerns
	// alone; nil for every one.
	users [][]string
}

func (h *heardKinds) record(gvr schema.GroupVersionResource, users []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kinds = append(h.kinds, gvr)
	h.users = append(h.users, users)
}

func (h *heardKinds) last() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.users[len(h.users)-1]
}

func (h *heardKinds) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.kinds)
}

// A remediation kind whose informer had synced, and then may no longer be
// listed or watched (its remediator uninstalled, its role removed), is
// stopped and reported instead of served from a stale cache, and tried again
// after RetryInterval; a synced retry clears the error.
func TestALostRemediationKindIsStoppedAndRetried(t *testing.T) {
	cases := []struct {
		name        string
		err         error
		wantUnknown bool
	}{
		// A lasting failure leaves the kind out of the unknown ones: one
		// broken remediator must not hold every control-plane node.
		{"forbidden", apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError), false},
		{"no longer served", apierrors.NewNotFound(testGVR.GroupResource(), ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			informers, clock := fakeClockInformers(t)
			heard := &heardKinds{}
			informers.AddStateChangeHandler(heard.record)
			informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			require.Eventually(t, func() bool { return informers.State(testGVR).Synced && heard.count() == 1 }, 10*time.Second, 10*time.Millisecond, "synced, and heard of")
			assert.Empty(t, informers.UnknownRemediations())

			informers.failed(testGVR, informers.informer(testGVR), tc.err)
			assert.Equal(t, State{Err: tc.err, RetryAt: clock.Now().Add(RetryInterval)}, informers.State(testGVR))
			assert.Empty(t, informers.Running(), "the informer is stopped")
			assert.Equal(t, 2, heard.count(), "its users hear of it")
			assert.Equal(t, tc.wantUnknown, len(informers.UnknownRemediations()) == 1)

			clock.SetTime(clock.Now().Add(RetryInterval - time.Second))
			informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			assert.Empty(t, informers.Running(), "not tried before the retry interval")

			clock.SetTime(clock.Now().Add(time.Second))
			informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running(), "tried again")
			require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, State{Synced: true}, informers.State(testGVR))
		})
	}
}

// roleFixture is informers on a fake clock whose lists of testGVR are
// forbidden while denied says so: the role of the kind's remediator comes
// and goes. The reactor is in place before any informer lists.
type roleFixture struct {
	informers *Informers
	clock     *clocktesting.FakePassiveClock
	client    *dynamicfake.FakeDynamicClient
	denied    *atomic.Bool
	forbidden error
}

func newRoleFixture(t *testing.T, objects ...runtime.Object) roleFixture {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := roleFixture{
		clock:     clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)),
		client:    fakeDynamic(objects...),
		denied:    &atomic.Bool{},
		forbidden: apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError),
	}
	f.client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return f.denied.Load(), nil, f.forbidden
	})
	f.informers = New(ctx, f.client, f.client, f.clock)
	return f
}

// retried tells whether testGVR's informer was started again: it runs, or
// its own forbidden list stopped it again already, until a later retry.
func retried(informers *Informers, clock *clocktesting.FakePassiveClock) bool {
	return informers.informer(testGVR) != nil || informers.State(testGVR).RetryAt.After(clock.Now())
}

// stopRetry fails testGVR's retry, unless its own list did already.
func stopRetry(informers *Informers, forbidden error) {
	if r := informers.informer(testGVR); r != nil {
		informers.failed(testGVR, r, forbidden)
	}
}

// forbiddenKind returns informers whose every list of testGVR is
// forbidden, on a fake clock, and the error.
func forbiddenKind(t *testing.T) (*Informers, *clocktesting.FakePassiveClock, error) {
	f := newRoleFixture(t)
	f.denied.Store(true)
	return f.informers, f.clock, f.forbidden
}

// A forbidden kind's retry that fails as the try before it did wakes only
// the NodeHealthChecks that use it: for the others nothing changed, and
// one broken remediator must not re-sync every NodeHealthCheck every 15 s.
func TestARetryThatFailsAgainConcernsItsUsersAlone(t *testing.T) {
	informers, clock, forbidden := forbiddenKind(t)
	heard := &heardKinds{}
	informers.AddStateChangeHandler(heard.record)
	informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	clock.SetTime(clock.Now().Add(WatchGrace))
	stopRetry(informers, forbidden)
	require.Equal(t, 1, heard.count())
	assert.Nil(t, heard.last(), "the first failure concerns every NodeHealthCheck")

	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.True(t, retried(informers, clock))
	stopRetry(informers, forbidden)
	require.Eventually(t, func() bool { return heard.count() == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"workers"}, heard.last(), "a retry failing again concerns its users alone")
}

// A forbidden first list of a remediation kind does not stop its informer
// within the grace, and does after it: RBAC granted with a NodeHealthCheck
// may take a moment to apply.
func TestARemediationKindFailingWithinTheGraceKeepsRunning(t *testing.T) {
	informers, clock, forbidden := forbiddenKind(t)
	informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	r := informers.informer(testGVR)
	informers.failed(testGVR, r, forbidden)
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running(), "within the grace")
	assert.Equal(t, State{}, informers.State(testGVR), "starting")

	clock.SetTime(clock.Now().Add(WatchGrace))
	informers.failed(testGVR, r, forbidden)
	assert.Empty(t, informers.Running(), "after the grace")
	assert.Equal(t, forbidden, informers.State(testGVR).Err)
}

// One broken remediator (its kind forbidden, or no longer served) does not
// make every control-plane remediation unknown for good: a kind stopped for
// a lasting reason is not unknown, while one still starting is. To stay
// safe, the nodes its cache showed when it stopped stay busy, for quorum and
// for every other NodeHealthCheck, through its retries, until it is
// readable again or no NodeHealthCheck uses it.
func TestAStoppedKindKeepsItsNodesBusyButIsNotUnknown(t *testing.T) {
	cp := testRemediation("cp-1", true)
	worker := testRemediation("worker-0", false)
	// A resource no NodeHealthCheck owns: its cache keeps it as a shell.
	foreign := testRemediation("worker-1", false)
	foreign.SetOwnerReferences(nil)
	f := newRoleFixture(t, cp, worker, foreign)
	informers, clock, client, denied, forbidden := f.informers, f.clock, f.client, f.denied, f.forbidden
	owner := resource.Owner{Name: testNHC.Name, UID: testNHC.UID}
	busy := map[string][]resource.Owner{"cp-1": {owner}, "worker-0": {owner}}
	// The first list waits until the kind was seen unknown: the fake
	// informer may sync before the assertion otherwise.
	started := make(chan struct{})
	client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		<-started
		return false, nil, nil
	})
	informers.Use("broken", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.UnknownRemediations(), "starting: unknown")
	close(started)
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"cp-1"}, informers.ControlPlaneNodes())
	assert.Equal(t, busy, informers.OtherOwners("another"))

	// Its remediator's role is removed: the kind is forbidden from now on.
	denied.Store(true)
	informers.failed(testGVR, informers.informer(testGVR), forbidden)
	assert.Empty(t, informers.UnknownRemediations(), "stopped for a lasting reason: not unknown")
	assert.Equal(t, []string{"cp-1"}, informers.ControlPlaneNodes(), "what its cache showed stays busy")
	assert.Equal(t, busy, informers.OtherOwners("another"), "for every other NodeHealthCheck too")
	assert.Equal(t, testNHC.Name, informers.OtherOwner("worker-0", "another"))

	// Retried, and forbidden again: still not unknown, still busy.
	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.Use("broken", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.True(t, retried(informers, clock), "retried")
	assert.Empty(t, informers.UnknownRemediations(), "a retry of a lasting failure is not unknown")
	assert.Equal(t, []string{"cp-1"}, informers.ControlPlaneNodes())
	assert.Equal(t, busy, informers.OtherOwners("another"))
	stopRetry(informers, forbidden)
	assert.Empty(t, informers.Running())
	assert.Equal(t, []string{"cp-1"}, informers.ControlPlaneNodes(), "kept through the retries")
	assert.Equal(t, busy, informers.OtherOwners("another"))

	// Readable again: its cache, not the memory, says what is busy.
	denied.Store(false)
	require.NoError(t, client.Tracker().Delete(testGVR, cp.GetNamespace(), cp.GetName()))
	require.NoError(t, client.Tracker().Delete(testGVR, worker.GetNamespace(), worker.GetName()))
	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.Use("broken", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
	assert.Empty(t, informers.ControlPlaneNodes(), "readable again, and the remediation is gone")
	assert.Empty(t, informers.OtherOwners("another"))

	// Stopped again, then no NodeHealthCheck uses it: nothing is remembered.
	informers.failed(testGVR, informers.informer(testGVR), forbidden)
	informers.Use("broken", Kinds{})
	assert.Empty(t, informers.ControlPlaneNodes())
	assert.Empty(t, informers.OtherOwners("another"))
	assert.Empty(t, informers.UnknownRemediations())
}

// A kind no longer served has no resources left: the API server deletes
// them with their CRD. What its cache showed is not kept, even if the cache
// missed their deletion: a node must not stay held by a remediation that
// is gone.
func TestAKindNoLongerServedKeepsNothingBusy(t *testing.T) {
	cp := testRemediation("cp-1", true)
	f := newRoleFixture(t, cp)
	f.informers.Use("uninstalled", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return f.informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"cp-1"}, f.informers.ControlPlaneNodes())

	f.informers.failed(testGVR, f.informers.informer(testGVR), apierrors.NewNotFound(testGVR.GroupResource(), ""))
	assert.Empty(t, f.informers.ControlPlaneNodes())
	assert.Empty(t, f.informers.OtherOwners("another"))
	assert.Empty(t, f.informers.UnknownRemediations())
}

// A kind that no NodeHealthCheck uses any more (its NodeHealthCheck was
// deleted, or its templates changed) stays watched while its cache holds
// remediation resources: they remediate their nodes until they are gone,
// and keep them busy meanwhile. Its informer stops once the last is gone.
func TestAnUnusedKindIsWatchedUntilItsRemediationsAreGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	cp := testRemediation("cp-1", true)
	client := fakeDynamic(cp)
	informers := New(ctx, client, client, clock)
	informers.Use("deleted", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)

	informers.Use("deleted", Kinds{})
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running(), "kept while its remediation exists")
	assert.Equal(t, []string{"cp-1"}, informers.ControlPlaneNodes())
	assert.Equal(t, map[string][]resource.Owner{"cp-1": {{Name: testNHC.Name, UID: testNHC.UID}}}, informers.OtherOwners("another"))
	assert.Empty(t, informers.UnknownRemediations(), "no NodeHealthCheck waits for it")

	require.NoError(t, client.Tracker().Delete(testGVR, cp.GetNamespace(), cp.GetName()))
	require.Eventually(t, func() bool { return len(informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond, "stopped once it is gone")
	assert.Empty(t, informers.ControlPlaneNodes())
}

// A kind that never synced before it was stopped shows nothing to remember.
func TestAKindStoppedBeforeItSyncedRemembersNothing(t *testing.T) {
	informers, clock, forbidden := forbiddenKind(t)
	informers.Use("broken", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	assert.Len(t, informers.UnknownRemediations(), 1, "within the grace: unknown")
	clock.SetTime(clock.Now().Add(WatchGrace))
	informers.failed(testGVR, informers.informer(testGVR), forbidden)
	assert.Empty(t, informers.UnknownRemediations())
	assert.Empty(t, informers.ControlPlaneNodes())
}

// A kind stopped for a lasting error that no NodeHealthCheck uses any more
// (its NodeHealthCheck deleted) keeps what it showed: the resources may
// still remediate their nodes, kept by a finalizer, unseen. It is tried
// again, and forgotten once it can be read and shows nothing.
func TestAnUnusedStoppedKindKeepsWhatItShowedUntilItCanBeRead(t *testing.T) {
	worker := testRemediation("worker-0", false)
	f := newRoleFixture(t, worker)
	informers, clock, client, denied, forbidden := f.informers, f.clock, f.client, f.denied, f.forbidden
	informers.Use("deleted", Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
	denied.Store(true)
	informers.failed(testGVR, informers.informer(testGVR), forbidden)

	informers.Use("deleted", Kinds{})
	held := map[string][]resource.Owner{"worker-0": {{Name: testNHC.Name, UID: testNHC.UID}}}
	assert.Equal(t, held, informers.OtherOwners("another"), "no one uses it, and it may still remediate")

	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.Use("another", Kinds{Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Name: "template"}}}})
	require.True(t, retried(informers, clock), "tried again")
	stopRetry(informers, forbidden)
	assert.Equal(t, held, informers.OtherOwners("another"), "still forbidden: still held")

	denied.Store(false)
	require.NoError(t, client.Tracker().Delete(testGVR, worker.GetNamespace(), worker.GetName()))
	clock.SetTime(clock.Now().Add(RetryInterval))
	informers.Use("another", Kinds{Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Name: "template"}}}})
	require.Eventually(t, func() bool { return len(informers.Running()) == 1 }, 10*time.Second, 10*time.Millisecond, "readable, empty, stopped")
	assert.Empty(t, informers.OtherOwners("another"))
}

// A template kind that may not be listed or watched is read with GET
// meanwhile, and tried again after the long TemplateRetryInterval; one no
// longer served (its CRD deleted) cannot be read at all, and is tried
// again after RetryInterval, so that a CRD installed again is used within
// it.
func TestAStoppedTemplateKindIsTriedAgainAfterItsInterval(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantRetry time.Duration
	}{
		{"forbidden, read with GET meanwhile", apierrors.NewForbidden(testTemplateGVR.GroupResource(), "", assert.AnError), TemplateRetryInterval},
		{"no longer served", apierrors.NewNotFound(testTemplateGVR.GroupResource(), ""), RetryInterval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			informers, clock := fakeClockInformers(t)
			uses := Kinds{Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Name: "template"}}}}
			informers.Use("workers", uses)
			require.Eventually(t, func() bool { return informers.State(testTemplateGVR).Synced }, 10*time.Second, 10*time.Millisecond)

			informers.failed(testTemplateGVR, informers.informer(testTemplateGVR), tc.err)
			assert.Equal(t, State{Err: tc.err, RetryAt: clock.Now().Add(tc.wantRetry)}, informers.State(testTemplateGVR))

			clock.SetTime(clock.Now().Add(tc.wantRetry))
			informers.Use("workers", uses)
			assert.Equal(t, []schema.GroupVersionResource{testTemplateGVR}, informers.Running(), "tried again")
		})
	}
}

// fakeClockInformers are informers of an empty fake API on a fake clock,
// stopped with the test.
func fakeClockInformers(t *testing.T) (*Informers, *clocktesting.FakePassiveClock) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	return New(ctx, fakeDynamic(), fakeDynamic(), clock), clock
}

// An informer that cannot list its kind for a passing reason (the API
// server unavailable) is stopped once the grace passed and started again
// PassingRetryInterval later, instead of waiting out client-go's back-off,
// which after half a minute of failures reaches 25 to 51 s a try; a synced
// informer keeps its cache and its reflector through such errors.
func TestAnInformerThatCannotListForAPassingReasonStartsAgainSoon(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	client := fakeDynamic()
	down := &atomic.Bool{}
	down.Store(true)
	unavailable := apierrors.NewServiceUnavailable("the API server is restarting")
	client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return down.Load(), nil, unavailable
	})
	informers := New(ctx, client, client, clock)
	use := func() { informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testGVR}}) }
	use()
	r := informers.informer(testGVR)
	informers.failed(testGVR, r, unavailable)
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running(), "within the grace, its reflector retries")

	clock.SetTime(clock.Now().Add(WatchGrace))
	informers.failed(testGVR, r, unavailable)
	assert.Empty(t, informers.Running(), "after the grace")
	state := informers.State(testGVR)
	assert.Equal(t, unavailable, state.Err)
	assert.Equal(t, clock.Now().Add(PassingRetryInterval), state.RetryAt)
	use()
	assert.Empty(t, informers.Running(), "a sync before the retry does not start it again")

	clock.SetTime(clock.Now().Add(PassingRetryInterval))
	down.Store(false)
	use()
	require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond, "started again, it lists at once")

	clock.SetTime(clock.Now().Add(time.Minute))
	informers.failed(testGVR, informers.informer(testGVR), unavailable)
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running(), "synced, it keeps running")
}
