package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
)

// nobody owns a resource of any node in the caches.
func nobody() string { return "" }

// A create whose informer event has not come within inflight.TTL is
// looked up at the API server: the watch may have stopped sending. Found,
// its node goes on waiting, so that the cache's silence neither drops it
// from the status nor lets a second remediation start, until it lapses
// again; unreadable, its node waits too, and it is looked up again soon;
// gone, it lapses.
func TestALapsedCreateIsLookedUpAtTheAPIServer(t *testing.T) {
	created, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		objects []runtime.Object
		getErr  error
		pending map[string]bool
		// lookedUpAgain: a sync TTL/2 later looks it up again.
		lookedUpAgain bool
	}{
		{"the API server has it", []runtime.Object{created}, nil, map[string]bool{"worker-1": true}, false},
		{"gone", nil, nil, nil, false},
		{"cannot be read", nil, apierrors.NewForbidden(testGVR.GroupResource(), created.GetName(), assert.AnError), map[string]bool{"worker-1": true}, true},
		{"not answered", nil, apierrors.NewInternalError(assert.AnError), map[string]bool{"worker-1": true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newWriteFixture(t)
			for _, obj := range tt.objects {
				require.NoError(t, f.client.Tracker().Add(obj))
			}
			gets := 0
			f.client.PrependReactor("get", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				gets++
				return tt.getErr != nil, nil, tt.getErr
			})
			// Its informer never ran: nothing will show the create.
			require.NoError(t, f.writer.ledger.Book(inflight.CreateKey(testNHC.Name, testGVR, created.GetNamespace(), "worker-1", "reboot"), "", created.GetName(), false, false, nobody))
			f.clock.SetTime(f.clock.Now().Add(inflight.TTL))

			f.writer.LookUpLapsed(context.Background())
			seen, err := f.observer.Read(testNHC, &Watched{})
			require.NoError(t, err)
			assert.Equal(t, tt.pending, seen.Pending)
			assert.Equal(t, 1, gets)

			f.clock.SetTime(f.clock.Now().Add(inflight.TTL / 2))
			f.writer.LookUpLapsed(context.Background())
			assert.Equal(t, tt.pending, f.writer.ledger.Pending(testNHC.Name), "expected again")
			assert.Equal(t, tt.lookedUpAgain, gets == 2, "looked up again")
		})
	}
}

// A create the API server answered 500 may have happened: its node waits,
// and it is looked up a second later rather than a minute, so that once
// the API server answers again the node and the others go on.
func TestACreateAnswered500IsLookedUpASecondLater(t *testing.T) {
	f := newWriteFixture(t)
	failing := true
	f.client.PrependReactor("*", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return failing, nil, apierrors.NewInternalError(assert.AnError)
	})
	out := f.apply(testNHC, createPlan("worker-1"), f.watched)
	require.Len(t, out.Errors, 1)
	assert.Equal(t, map[string]bool{"worker-1": true}, f.writer.ledger.Pending(testNHC.Name), "its resource may exist")

	failing = false
	f.clock.SetTime(f.clock.Now().Add(time.Second))
	f.writer.LookUpLapsed(context.Background())
	assert.Empty(t, f.writer.ledger.Pending(testNHC.Name), "looked up gone")
	assert.Len(t, f.apply(testNHC, createPlan("worker-1"), f.watched).Created, 1)
}

// A create another NodeHealthCheck made, which its informer has not shown
// (a silent watch) and whose own NodeHealthCheck no longer syncs (it is
// disabled), is looked up by any sync once it lapses: found, it goes on
// holding its node against every other NodeHealthCheck (a second NodeHealthCheck
// would remediate the node beside it).
func TestAnotherNodeHealthChecksLapsedCreateStillHoldsItsNode(t *testing.T) {
	f := newWriteFixture(t)
	// Generated names, so that the API server would take both resources.
	f.watched.reads[0].Obj = testTemplate(map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"})
	require.Len(t, f.apply(nhcNamed("disabled"), createPlan("worker-1"), f.watched).Created, 1)
	f.clock.SetTime(f.clock.Now().Add(inflight.TTL))

	f.writer.LookUpLapsed(context.Background())
	out := f.apply(testNHC, createPlan("worker-1"), f.watched)
	assert.Empty(t, out.Created)
	assert.Len(t, out.Blocked, 1, "the disabled NodeHealthCheck's create, found at the API server, holds the node")
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
	o, w := testRooms(informers, nil, clock, client, kubefake.NewClientset().CoreV1().Nodes())
	seen, err := o.Read(nhcNamed("others"), &Watched{})
	require.NoError(t, err)
	assert.Zero(t, seen.RefreshAfter, "nothing under way")

	require.NoError(t, w.ledger.Book(inflight.CreateKey("workers", testGVR, "remediators", "cp-1", "reboot"), "", "r", true, true, nobody))
	clock.SetTime(clock.Now().Add(time.Second))
	seen, err = o.Read(nhcNamed("others"), &Watched{})
	require.NoError(t, err)
	assert.Equal(t, inflight.TTL-time.Second, seen.RefreshAfter, "another's control-plane create under way")
}
