package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
)

// nobody owns a resource of any node in the caches.
func nobody() string { return "" }

func TestWritesUnderWay(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	e := newInFlight(clock)
	assert.Empty(t, e.pendingNodes("workers"), "nothing expected after a start")

	r, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	r.SetUID("r-uid")

	require.NoError(t, e.book(createKey("workers", testGVR, "remediators", "worker-1", "reboot"), "r", false, false, nobody))
	assert.Equal(t, map[string]bool{"worker-1": true}, e.pendingNodes("workers"), "only the node written to waits")
	assert.Empty(t, e.pendingNodes("others"), "per NodeHealthCheck")
	assert.Equal(t, []string{"workers"}, e.settle(testGVR, r, false), "the create of workers confirmed")
	assert.Empty(t, e.pendingNodes("workers"), "the informer shows the created resource")
	assert.Empty(t, e.settle(testGVR, r, false), "confirmed once")

	e.expectDelete("workers", "worker-1", "r-uid")
	assert.Empty(t, e.settle(testGVR, r, false), "a deletion is no create confirmed")
	assert.Equal(t, map[string]bool{"worker-1": true}, e.pendingNodes("workers"), "still there")
	deleting := r.DeepCopy()
	deleting.SetDeletionTimestamp(&metav1.Time{Time: clock.Now()})
	e.settle(testGVR, deleting, false)
	assert.Empty(t, e.pendingNodes("workers"), "a deletion timestamp is the delete observed")

	require.NoError(t, e.book(createKey("workers", testGVR, "remediators", "worker-2", "reboot"), "r", false, false, nobody))
	e.cancel(createKey("workers", testGVR, "remediators", "worker-2", "reboot"))
	assert.Empty(t, e.pendingNodes("workers"))

	require.NoError(t, e.book(createKey("workers", testGVR, "remediators", "worker-3", "reboot"), "r", false, false, nobody))
	clock.SetTime(clock.Now().Add(inFlightTTL - time.Nanosecond))
	assert.Equal(t, map[string]bool{"worker-3": true}, e.pendingNodes("workers"))
	clock.SetTime(clock.Now().Add(time.Nanosecond))
	assert.Empty(t, e.pendingNodes("workers"), "an event that never came lapses")
}

// A create whose informer event has not come within inFlightTTL is
// looked up at the API server: the watch may have stopped sending. Found,
// or unreadable, its node goes on waiting, so that the cache's silence
// neither drops it from the status nor lets a second remediation start;
// gone, it lapses.
func TestALapsedCreateIsLookedUpAtTheAPIServer(t *testing.T) {
	created, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		objects []runtime.Object
		getErr  error
		pending map[string]bool
	}{
		{"the API server has it", []runtime.Object{created}, nil, map[string]bool{"worker-1": true}},
		{"gone", nil, nil, nil},
		{"cannot be read", nil, apierrors.NewForbidden(testGVR.GroupResource(), created.GetName(), assert.AnError), map[string]bool{"worker-1": true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newWriteFixture(t)
			for _, obj := range tt.objects {
				require.NoError(t, f.client.Tracker().Add(obj))
			}
			if tt.getErr != nil {
				f.client.PrependReactor("get", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.getErr })
			}
			// Its informer never ran: nothing will show the create.
			require.NoError(t, f.writer.inFlight.book(createKey(testNHC.Name, testGVR, created.GetNamespace(), "worker-1", "reboot"), created.GetName(), false, false, nobody))
			f.clock.SetTime(f.clock.Now().Add(inFlightTTL))

			f.writer.LookUpLapsed(context.Background())
			obs, err := f.observer.Read(testNHC, Watched{}, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.pending, obs.PendingNodes)
			f.clock.SetTime(f.clock.Now().Add(inFlightTTL / 2))
			assert.Equal(t, tt.pending, f.writer.inFlight.pendingNodes(testNHC.Name), "expected again for a while")
		})
	}
}

// A create another NodeHealthCheck made, which its informer has not shown
// (a silent watch) and whose own NodeHealthCheck no longer syncs (it is
// disabled), is looked up by any sync once it lapses: found, it goes on
// holding its node against every other NodeHealthCheck (a second NodeHealthCheck
// would remediate the node beside it).
func TestAnotherNodeHealthChecksLapsedCreateStillHoldsItsNode(t *testing.T) {
	f := newWriteFixture(t)
	// Generated names, so that the API server would take both resources.
	f.obs.templates[bareTemplateRef(templateRef)] = testTemplate(map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"})
	require.Len(t, f.apply(nhcNamed("disabled"), createPlan("worker-1"), f.obs).Created, 1)
	f.clock.SetTime(f.clock.Now().Add(inFlightTTL))

	f.writer.LookUpLapsed(context.Background())
	out := f.apply(testNHC, createPlan("worker-1"), f.obs)
	assert.Empty(t, out.Created)
	assert.Len(t, out.Blocked, 1, "the disabled NodeHealthCheck's create, found at the API server, holds the node")
}

// One create, one entry: it is pending until its informer shows it, and a
// control-plane create holds the cluster's one control-plane slot until its
// resource is seen gone, shown or not.
func TestAControlPlaneCreateHoldsTheSlotUntilItsResourceIsGone(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := newInFlight(clock)
	r, key := createdControlPlaneRemediation(t, f)

	other := createKey("others", testGVR, r.GetNamespace(), "master-1", "reboot")
	var busy *controlPlaneBusyError
	assert.ErrorAs(t, f.book(other, "master-1", true, true, nobody), &busy, "one control-plane node at a time")
	assert.Equal(t, []string{"master-0"}, f.controlPlaneNodes())
	assert.Equal(t, map[string]bool{"master-0": true}, f.pendingNodes(testNHC.Name))

	assert.Equal(t, []string{testNHC.Name}, f.settle(testGVR, r, false), "the create confirmed")
	assert.Empty(t, f.pendingNodes(testNHC.Name), "shown: no longer pending")
	assert.Equal(t, []string{"master-0"}, f.controlPlaneNodes(), "the slot holds while the resource exists")
	assert.Empty(t, f.pendingResources(testNHC.Name))

	clock.SetTime(clock.Now().Add(inFlightTTL))
	lapsed := f.lapsed()
	require.Len(t, lapsed, 1, "a slot held for inFlightTTL is looked up")
	assert.True(t, lapsed[0].shown)
	f.lookedUp(lapsed[0], &lapsed[0].write)
	assert.Equal(t, []string{"master-0"}, f.controlPlaneNodes(), "renewed: found and not shown")

	earlier := r.DeepCopy()
	earlier.SetUID("deleted-before")
	f.settle(testGVR, earlier, true)
	assert.Equal(t, []string{"master-0"}, f.controlPlaneNodes(), "an earlier resource of the name, seen gone late, frees nothing")

	f.settle(testGVR, r, true)
	assert.Empty(t, f.controlPlaneNodes(), "seen gone: the slot is free")
	assert.Empty(t, f.writes, "nothing left")

	// Deleted before its informer showed the create: the slot is free, and
	// the node waits for the create until it lapses.
	require.NoError(t, f.book(key, r.GetName(), true, true, nobody))
	f.created(key, r.GetUID())
	f.settle(testGVR, earlier, false)
	assert.Equal(t, map[string]bool{"master-0": true}, f.pendingNodes(testNHC.Name), "an earlier resource of the name shows nothing of this create")
	f.settle(testGVR, r, true)
	assert.Empty(t, f.controlPlaneNodes())
	assert.Equal(t, map[string]bool{"master-0": true}, f.pendingNodes(testNHC.Name))
	f.forget(testNHC.Name)
	assert.Equal(t, map[string]bool{"master-0": true}, f.pendingNodes(testNHC.Name), "a deleted NodeHealthCheck's create waits for its lookup")
}

// A deleted NodeHealthCheck's create holds its node until its informer
// shows it or its lookup finds it gone: a remediator's finalizer keeps the
// resource while it works: a NodeHealthCheck recreated under the same name
// would otherwise start a second remediation beside one a stalled watch
// has not shown. Its deletes are dropped.
func TestADeletedNodeHealthChecksCreateHoldsItsNode(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := newInFlight(clock)
	r, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	key := createKey(testNHC.Name, testGVR, r.GetNamespace(), "worker-1", "reboot")
	require.NoError(t, f.book(key, r.GetName(), true, false, nobody))
	f.expectDelete(testNHC.Name, "worker-2", "deleted-uid")

	f.forget(testNHC.Name)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.pendingNodes(testNHC.Name), "the same name recreated waits for the node")
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, f.pendingResources(testNHC.Name), "and watches the kind")
	var other *remediatedByOtherError
	require.ErrorAs(t, f.book(createKey("others", testGVR, r.GetNamespace(), "worker-1", "reboot"), "other", true, false, nobody), &other)
	assert.Equal(t, testNHC.Name, other.other, "another NodeHealthCheck waits for the node")

	clock.SetTime(clock.Now().Add(inFlightTTL))
	lapsed := f.lapsed()
	require.Len(t, lapsed, 1, "looked up once it lapsed, the delete is gone")
	assert.Equal(t, key, lapsed[0].key)
}

// Every NodeHealthCheck reads again when a write the informers have not
// shown lapses: until it is looked up, it holds its node, and a control-plane
// create the cluster's slot, and no event comes then.
func TestAWriteUnderWayWakesAtItsLapse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	client := fakeDynamic()
	informers := kinds.New(ctx, client, client, clock)
	o, w := newRooms(informers, nil, clock, client, kubefake.NewClientset().CoreV1().Nodes())
	obs, err := o.Read(nhcNamed("others"), Watched{}, nil)
	require.NoError(t, err)
	assert.Zero(t, obs.RefreshAfter, "nothing under way")

	require.NoError(t, w.inFlight.book(createKey("workers", testGVR, "remediators", "cp-1", "reboot"), "r", true, true, nobody))
	clock.SetTime(clock.Now().Add(time.Second))
	obs, err = o.Read(nhcNamed("others"), Watched{}, nil)
	require.NoError(t, err)
	assert.Equal(t, inFlightTTL-time.Second, obs.RefreshAfter, "another's control-plane create under way")
}

// A lapsed create holds its node while it is looked up: a sync at the same
// instant must not find it gone and create it again.
func TestALapsedCreateHoldsItsNodeWhileLookedUp(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := newInFlight(clock)
	key := createKey("workers", testGVR, "remediators", "worker-1", "reboot")
	require.NoError(t, f.book(key, "r", true, false, nobody))
	clock.SetTime(clock.Now().Add(inFlightTTL))
	lapsed := f.lapsed()
	require.Len(t, lapsed, 1)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.pendingNodes("workers"), "its lookup under way")
	f.lookedUp(lapsed[0], nil)
	assert.Empty(t, f.pendingNodes("workers"), "looked up gone")
}

// A kind the API no longer serves takes its creates out of the ledger, the
// control-plane slot with them: its resources went with its CRD, and the
// other control-plane nodes need not wait for a look-up to say so.
func TestAKindNoLongerServedFreesItsSlot(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := newInFlight(clock)
	r, _ := createdControlPlaneRemediation(t, f)
	f.settle(testGVR, r, false)
	require.Equal(t, []string{"master-0"}, f.controlPlaneNodes())

	f.forgetKind(schema.GroupVersionResource{Group: "other.example.com", Version: "v1", Resource: "others"})
	assert.Equal(t, []string{"master-0"}, f.controlPlaneNodes(), "another kind's forgetting frees nothing")
	f.forgetKind(testGVR)
	assert.Empty(t, f.controlPlaneNodes(), "the slot is free")
	assert.Empty(t, f.writes)
}

// createdControlPlaneRemediation books and answers the create of
// master-0's remediation, which takes the control-plane slot.
func createdControlPlaneRemediation(t *testing.T, f *inFlight) (*unstructured.Unstructured, writeKey) {
	t.Helper()
	r, err := newRemediation(testTemplate(nil), testNHC, "master-0", true)
	require.NoError(t, err)
	r.SetUID("r-uid")
	key := createKey(testNHC.Name, testGVR, r.GetNamespace(), "master-0", "reboot")
	require.NoError(t, f.book(key, r.GetName(), true, true, nobody))
	f.created(key, r.GetUID())
	return r, key
}
