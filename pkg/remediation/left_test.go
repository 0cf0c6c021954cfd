package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
)

// leasesRead answers every read with its leases.
type leasesRead struct{ leases *health.Leases }

func (l leasesRead) Read() (*health.Leases, *health.Problem, error) { return l.leases, nil, nil }

// A deleted NodeHealthCheck's lease holds a node while a remediation
// resource of any NodeHealthCheck is on it, or a create of its own is under
// way; and nothing is known while a kind that may hold resources is not
// read yet.
func TestWatchLeftTellsWhatHoldsADeletedNodeHealthChecksNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	other := nhcNamed("other")
	theirs, err := newRemediation(testTemplate(nil), other, "worker-2", false)
	require.NoError(t, err)
	client := fakeDynamic(theirs)
	informers := kinds.New(ctx, client, client, clock)
	held := health.NodeLease{Holder: health.LeaseHolder("gone"), Renewed: clock.Now(), Duration: 11 * time.Minute}
	leases := &health.Leases{ByNode: map[string]health.NodeLease{"worker-1": held, "worker-2": held, "worker-3": held,
		"worker-4": {Holder: health.LeaseHolder("other"), Renewed: clock.Now(), Duration: 11 * time.Minute}}}
	o, w := testRooms(informers, nil, clock, client, nil)
	o.leases = leasesRead{leases}

	informers.Look([]schema.GroupVersionResource{testGVR})
	require.Eventually(t, func() bool { return len(informers.UnknownRemediations()) == 0 }, 10*time.Second, 10*time.Millisecond)
	left, err := o.WatchLeft("gone")
	require.NoError(t, err)
	assert.False(t, left.Known, "the kinds of every NodeHealthCheck not looked at yet (WatchAll)")
	require.NoError(t, o.WatchAll(context.Background(), func() ([]*v1alpha1.NodeHealthCheck, error) { return nil, nil }))
	require.NoError(t, w.ledger.Book(inflight.CreateKey("gone", testGVR, "remediators", "worker-3", "reboot"), "", "worker-3", true, false, nobody))

	left, err = o.WatchLeft("gone")
	require.NoError(t, err)
	assert.True(t, left.Known)
	assert.Equal(t, leases, left.Leases)
	assert.Equal(t, map[string]bool{"worker-2": true, "worker-3": true}, left.Busy, "another's resource on worker-2, its own create under way on worker-3")
	assert.Equal(t, []string{"worker-1"}, health.LeasesLeft(health.LeaseHolder("gone"), left.Leases, left.Busy))
}
