package inflight

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

const testNHC = "workers"

var testGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}

// nobody owns a resource of any node in the caches.
func nobody() string { return "" }

// remediationOf is testNHC's remediation resource of a node, from template
// reboot, as the Writer generates it.
func remediationOf(node string, controlPlane bool) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetAPIVersion(testGVR.GroupVersion().String())
	r.SetKind("TestRemediation")
	r.SetNamespace("remediators")
	r.SetName(node)
	r.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeHealthCheck", Name: testNHC, UID: "nhc-uid", Controller: ptr.To(false)}})
	r.SetAnnotations(map[string]string{v1alpha1.NodeNameAnnotation: node, v1alpha1.TemplateNameAnnotation: "reboot"})
	labels := map[string]string{v1alpha1.PartOfLabel: v1alpha1.PartOfValue}
	if controlPlane {
		labels[v1alpha1.ControlPlaneNodeLabel] = ""
	}
	r.SetLabels(labels)
	return r
}

func TestWritesUnderWay(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	e := New(clock)
	assert.Empty(t, e.Pending("workers"), "nothing expected after a start")

	r := remediationOf("worker-1", false)
	r.SetUID("r-uid")

	require.NoError(t, e.Book(CreateKey("workers", testGVR, "remediators", "worker-1", "reboot"), "", "r", false, false, nobody))
	assert.Equal(t, map[string]bool{"worker-1": true}, e.Pending("workers"), "only the node written to waits")
	assert.Empty(t, e.Pending("others"), "per NodeHealthCheck")
	assert.Equal(t, []string{"workers"}, e.Settle(testGVR, r, false), "the create of workers confirmed")
	assert.Empty(t, e.Pending("workers"), "the informer shows the created resource")
	assert.Empty(t, e.Settle(testGVR, r, false), "confirmed once")

	e.ExpectDelete("workers", "worker-1", "r-uid")
	assert.Empty(t, e.Settle(testGVR, r, false), "a deletion is no create confirmed")
	assert.Equal(t, map[string]bool{"worker-1": true}, e.Pending("workers"), "still there")
	deleting := r.DeepCopy()
	deleting.SetDeletionTimestamp(&metav1.Time{Time: clock.Now()})
	e.Settle(testGVR, deleting, false)
	assert.Empty(t, e.Pending("workers"), "a deletion timestamp is the delete observed")

	require.NoError(t, e.Book(CreateKey("workers", testGVR, "remediators", "worker-2", "reboot"), "", "r", false, false, nobody))
	e.Cancel(CreateKey("workers", testGVR, "remediators", "worker-2", "reboot"))
	assert.Empty(t, e.Pending("workers"))

	require.NoError(t, e.Book(CreateKey("workers", testGVR, "remediators", "worker-3", "reboot"), "", "r", false, false, nobody))
	clock.SetTime(clock.Now().Add(TTL - time.Nanosecond))
	assert.Equal(t, map[string]bool{"worker-3": true}, e.Pending("workers"))
	clock.SetTime(clock.Now().Add(time.Nanosecond))
	assert.Empty(t, e.Pending("workers"), "an event that never came lapses")
}

// One create, one entry: it is pending until its informer shows it, and a
// control-plane create holds the cluster's one control-plane slot until its
// resource is seen gone, shown or not.
func TestAControlPlaneCreateHoldsTheSlotUntilItsResourceIsGone(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	r, key := createdControlPlaneRemediation(t, f)

	other := CreateKey("others", testGVR, r.GetNamespace(), "master-1", "reboot")
	var busy *controlPlaneBusyError
	assert.ErrorAs(t, f.Book(other, "", "master-1", true, true, nobody), &busy, "one control-plane node at a time")
	assert.Equal(t, []string{"master-0"}, f.ControlPlaneNodes())
	assert.Equal(t, map[string]bool{"master-0": true}, f.Pending(testNHC))

	assert.Equal(t, []string{testNHC}, f.Settle(testGVR, r, false), "the create confirmed")
	assert.Empty(t, f.Pending(testNHC), "shown: no longer pending")
	assert.Equal(t, []string{"master-0"}, f.ControlPlaneNodes(), "the slot holds while the resource exists")
	assert.Empty(t, f.PendingResources(testNHC))

	clock.SetTime(clock.Now().Add(TTL))
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1, "a slot held for TTL is looked up")
	assert.True(t, lapsed[0].Shown)
	f.KeepSlot(lapsed[0])
	assert.Equal(t, []string{"master-0"}, f.ControlPlaneNodes(), "renewed: found and not shown")

	earlier := r.DeepCopy()
	earlier.SetUID("deleted-before")
	f.Settle(testGVR, earlier, true)
	assert.Equal(t, []string{"master-0"}, f.ControlPlaneNodes(), "an earlier resource of the name, seen gone late, frees nothing")

	f.Settle(testGVR, r, true)
	assert.Empty(t, f.ControlPlaneNodes(), "seen gone: the slot is free")
	assert.Empty(t, f.writes, "nothing left")

	// Deleted before its informer showed the create: the slot is free, and
	// the node waits for the create until it lapses.
	require.NoError(t, f.Book(key, "", r.GetName(), true, true, nobody))
	f.Created(key, r.GetUID())
	f.Settle(testGVR, earlier, false)
	assert.Equal(t, map[string]bool{"master-0": true}, f.Pending(testNHC), "an earlier resource of the name shows nothing of this create")
	f.Settle(testGVR, r, true)
	assert.Empty(t, f.ControlPlaneNodes())
	assert.Equal(t, map[string]bool{"master-0": true}, f.Pending(testNHC))
	f.Forget(testNHC)
	assert.Equal(t, map[string]bool{"master-0": true}, f.Pending(testNHC), "a deleted NodeHealthCheck's create waits for its lookup")
}

// A deleted NodeHealthCheck's create holds its node until its informer
// shows it or its lookup finds it gone: a remediator's finalizer keeps the
// resource while it works: a NodeHealthCheck recreated under the same name
// would otherwise start a second remediation beside one a stalled watch
// has not shown. Its deletes are dropped.
func TestADeletedNodeHealthChecksCreateHoldsItsNode(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	r := remediationOf("worker-1", false)
	key := CreateKey(testNHC, testGVR, r.GetNamespace(), "worker-1", "reboot")
	require.NoError(t, f.Book(key, "", r.GetName(), true, false, nobody))
	f.ExpectDelete(testNHC, "worker-2", "deleted-uid")

	f.Forget(testNHC)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.Pending(testNHC), "the same name recreated waits for the node")
	assert.Equal(t, []schema.GroupVersionResource{testGVR}, f.PendingResources(testNHC), "and watches the kind")
	var other *remediatedByOtherError
	require.ErrorAs(t, f.Book(CreateKey("others", testGVR, r.GetNamespace(), "worker-1", "reboot"), "", "other", true, false, nobody), &other)
	assert.Equal(t, testNHC, other.other, "another NodeHealthCheck waits for the node")

	clock.SetTime(clock.Now().Add(TTL))
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1, "looked up once it lapsed, the delete is gone")
	assert.Equal(t, key, lapsed[0].key)
}

// A lapsed create holds its node while it is looked up: a sync at the same
// instant must not find it gone and create it again.
func TestALapsedCreateHoldsItsNodeWhileLookedUp(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	key := CreateKey("workers", testGVR, "remediators", "worker-1", "reboot")
	require.NoError(t, f.Book(key, "", "r", true, false, nobody))
	clock.SetTime(clock.Now().Add(TTL))
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.Pending("workers"), "its lookup under way")
	f.Drop(lapsed[0])
	assert.Empty(t, f.Pending("workers"), "looked up gone")
}

// A create whose fate the API server did not tell is looked up a second
// later, and while its look-ups get no answer, at doubling intervals up to
// 15 s: its node, and the others of a NodeHealthCheck whose status
// records no remediation yet, wait until it is known, and must not wait a
// minute past an outage's end.
func TestACreateOfUnknownFateIsLookedUpSoon(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	key := CreateKey("workers", testGVR, "remediators", "worker-1", "reboot")
	require.NoError(t, f.Book(key, "", "r", true, false, nobody))
	f.Unanswered(key)
	var lookUps []time.Duration
	start := clock.Now()
	for clock.Now().Sub(start) < 50*time.Second {
		assert.Equal(t, map[string]bool{"worker-1": true}, f.Pending("workers"), "its resource may exist")
		clock.SetTime(clock.Now().Add(100 * time.Millisecond))
		lapsed := f.Lapsed()
		if len(lapsed) == 0 {
			continue
		}
		lookUps = append(lookUps, clock.Now().Sub(start))
		f.Retry(lapsed[0])
	}
	assert.Equal(t, []time.Duration{time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 30 * time.Second, 45 * time.Second}, lookUps)

	clock.SetTime(clock.Now().Add(health.MaxCreateRetry))
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1)
	f.Drop(lapsed[0])
	assert.Empty(t, f.Pending("workers"), "looked up gone once the API server answers")
}

// A kind the API no longer serves takes its creates out of the ledger, the
// control-plane slot with them: its resources went with its CRD, and the
// other control-plane nodes need not wait for a look-up to say so.
func TestAKindNoLongerServedFreesItsSlot(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	r, _ := createdControlPlaneRemediation(t, f)
	f.Settle(testGVR, r, false)
	require.Equal(t, []string{"master-0"}, f.ControlPlaneNodes())

	f.ForgetKind(schema.GroupVersionResource{Group: "other.example.com", Version: "v1", Resource: "others"})
	assert.Equal(t, []string{"master-0"}, f.ControlPlaneNodes(), "another kind's forgetting frees nothing")
	f.ForgetKind(testGVR)
	assert.Empty(t, f.ControlPlaneNodes(), "the slot is free")
	assert.Empty(t, f.writes)
}

// A kind whose informer synced again has the slots its shown creates hold
// looked up at once: a resource its remediator deleted while the kind was
// forbidden is seen gone by no event, and would hold back every other
// control-plane node until the slot's next look-up. A create not shown
// yet stays pending as it was.
func TestAKindSyncedAgainHasItsSlotsLookedUp(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	r, _ := createdControlPlaneRemediation(t, f)
	f.Settle(testGVR, r, false)
	unshown := CreateKey(testNHC, testGVR, "remediators", "worker-1", "reboot")
	require.NoError(t, f.Book(unshown, "", "worker-1", true, false, nobody))
	clock.SetTime(clock.Now().Add(TTL / 2))

	f.Resynced(schema.GroupVersionResource{Group: "other.example.com", Version: "v1", Resource: "others"})
	assert.Empty(t, f.Lapsed(), "another kind's sync lapses nothing")
	f.Resynced(testGVR)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.Pending(testNHC), "a create not shown yet is still pending")
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1, "the slot is looked up at the next sync")
	assert.True(t, lapsed[0].Shown)
	assert.True(t, lapsed[0].ControlPlane)
	f.Drop(lapsed[0])
	assert.Empty(t, f.ControlPlaneNodes(), "looked up gone: the slot is free")
}

// createdControlPlaneRemediation books and answers the create of
// master-0's remediation, which takes the control-plane slot.
func createdControlPlaneRemediation(t *testing.T, f *Ledger) (*unstructured.Unstructured, Key) {
	t.Helper()
	r := remediationOf("master-0", true)
	r.SetUID("r-uid")
	key := CreateKey(testNHC, testGVR, r.GetNamespace(), "master-0", "reboot")
	require.NoError(t, f.Book(key, "", r.GetName(), true, true, nobody))
	f.Created(key, r.GetUID())
	return r, key
}

// TestASlotGivenUpWithNoResourceIsTold: a control-plane create that
// failed, was looked up gone, or whose kind went, frees the slot with no
// resource event; the ledger tells so. A worker's create holds no slot.
func TestASlotGivenUpWithNoResourceIsTold(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	freed := 0
	f.OnSlotFreed(func() { freed++ })
	book := func(node string, controlPlane bool) Key {
		key := CreateKey(testNHC, testGVR, "remediators", node, "reboot")
		require.NoError(t, f.Book(key, "", node, true, controlPlane, nobody))
		return key
	}

	f.Cancel(book("worker-0", false))
	assert.Equal(t, 0, freed, "a worker's create holds no slot")
	f.Cancel(book("master-0", true))
	assert.Equal(t, 1, freed, "a refused control-plane create")

	book("master-0", true)
	clock.SetTime(clock.Now().Add(TTL))
	lapsed := f.Lapsed()
	require.Len(t, lapsed, 1)
	f.Drop(lapsed[0])
	assert.Equal(t, 2, freed, "looked up gone")

	book("master-0", true)
	f.ForgetKind(testGVR)
	assert.Equal(t, 3, freed, "its kind no longer served")
	assert.Empty(t, f.ControlPlaneNodes())
}

// A NodeHealthCheck deleted and created again under its name: the old
// one's create, not shown yet, holds its node (its resource may exist,
// held by a finalizer), but is not the new one's write: the new one's
// creates are not held for a write its status and the remediation guard
// will never show.
func TestACreateOfAnEarlierNodeHealthCheckOfTheNameHoldsItsNodeOnly(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	f := New(clock)
	require.NoError(t, f.Book(CreateKey(testNHC, testGVR, "remediators", "cp-0", "reboot"), "old-uid", "r", true, false, nobody))
	f.Forget(testNHC)

	assert.Equal(t, map[string]bool{"cp-0": true}, f.Pending(testNHC), "its node is held")
	assert.False(t, f.OwnWritePending(testNHC, "new-uid"), "not the new one's write")
	assert.True(t, f.OwnWritePending(testNHC, "old-uid"))

	require.NoError(t, f.Book(CreateKey(testNHC, testGVR, "remediators", "worker-0", "reboot"), "new-uid", "r", true, false, nobody))
	assert.True(t, f.OwnWritePending(testNHC, "new-uid"))
	clock.SetTime(clock.Now().Add(TTL))
	assert.False(t, f.OwnWritePending(testNHC, "new-uid"), "lapsed")
}
