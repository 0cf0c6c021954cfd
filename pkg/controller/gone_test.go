package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// A deleted NodeHealthCheck's leases on nodes where nothing of it is left
// are released at once, so that another NodeHealthCheck need not wait for
// them to run out; nothing is released while what may hold its nodes is
// not known. A lease kept on a busy node is tried again: nothing may wake a
// deleted NodeHealthCheck when its resources there vanish.
func TestSyncOfAGoneNodeHealthCheckReleasesTheLeasesItLeft(t *testing.T) {
	held := func(holder string) health.NodeLease {
		return health.NodeLease{Holder: holder, Renewed: t0.Time, Duration: 11 * time.Minute}
	}
	leases := &health.Leases{ByNode: map[string]health.NodeLease{
		"worker-1": held(health.LeaseHolder("workers")),
		"worker-2": held(health.LeaseHolder("workers")),
		"worker-3": held(health.LeaseHolder("others")),
		"worker-4": held("node-maintenance"),
	}}
	cases := []struct {
		name         string
		left         remediation.Left
		released     []string
		requeueAfter time.Duration
	}{
		{
			name:         "a busy node keeps its lease, the others are released",
			left:         remediation.Left{Known: true, Leases: leases, Busy: map[string]bool{"worker-2": true}},
			released:     []string{"NodeHealthCheck-workers/worker-1"},
			requeueAfter: problemRequeue,
		},
		{
			name:         "every node of its leases busy",
			left:         remediation.Left{Known: true, Leases: leases, Busy: map[string]bool{"worker-1": true, "worker-2": true}},
			requeueAfter: problemRequeue,
		},
		{
			name:     "only another's lease on a busy node",
			left:     remediation.Left{Known: true, Leases: leases, Busy: map[string]bool{"worker-3": true}},
			released: []string{"NodeHealthCheck-workers/worker-1", "NodeHealthCheck-workers/worker-2"},
		},
		{
			name:     "every node of its leases free",
			left:     remediation.Left{Known: true, Leases: leases},
			released: []string{"NodeHealthCheck-workers/worker-1", "NodeHealthCheck-workers/worker-2"},
		},
		{
			name:         "what holds its nodes not known yet",
			left:         remediation.Left{Leases: leases},
			requeueAfter: problemRequeue,
		},
		{
			name: "not known yet, and it holds no lease",
			left: remediation.Left{Leases: &health.Leases{ByNode: map[string]health.NodeLease{"worker-3": held(health.LeaseHolder("others"))}}},
		},
		{
			name: "the leases' cache not synced",
			left: remediation.Left{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, nil)
			fakeLeases := f.takeLeases(nil)
			f.remediations.left = tc.left
			requeueAfter, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tc.requeueAfter, requeueAfter)
			assert.ElementsMatch(t, tc.released, fakeLeases.released)
			assert.Empty(t, f.statuses.written)
		})
	}
}

// A deleted NodeHealthCheck's creates that no informer showed are looked
// up in its own sync: with no NodeHealthCheck left to sync, nothing else
// would, and the ledger would hold its nodes, and their leases, for good.
func TestSyncOfAGoneNodeHealthCheckLooksUpItsLapsedCreates(t *testing.T) {
	f := newSyncFixture(t, nil)
	f.takeLeases(nil)
	_, err := f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.syncs, 1, "the ledger looked up once")
}
