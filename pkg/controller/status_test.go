package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// A sync that created remediations leaves its status to the next second's
// sync once the stored status shows the remediation guard a remediation
// (here worker-0's): one status behind at most.
func TestASyncThatCreatedLeavesItsStatusToTheNextSecondsSync(t *testing.T) {
	const condition = 300 * time.Second
	second := func(n int) time.Time { return t0.Add(time.Duration(n)*time.Second - condition) }
	nhc := workersNHC()
	f := newSyncFixture(t, nhc, notReady("worker-1", second(0)), notReady("worker-2", second(1)),
		notReady("worker-3", second(2)), healthyNode("worker-4"))
	f.remediating(t, nhc, "worker-0")
	created := func(node string) {
		ref := createdRef(health.Creation{Node: node, Template: snrTemplate})
		f.remediations.seen.Remediations[node] = []health.Remediation{{Ref: ref, TemplateName: snrTemplate.Name, Created: f.clock.Now()}}
	}
	remediated := func(t *testing.T, nodes ...string) {
		t.Helper()
		status := f.lastStatus(t)
		for _, node := range nodes {
			if entry := entryOf(status, node); assert.NotNil(t, entry, node) {
				assert.Len(t, entry.Remediations, 1, node)
			}
		}
		assert.Len(t, status.RemediationHistory, len(nodes))
	}

	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, time.Second, d, "the next node is due in a second")
	assert.Len(t, f.remediations.creates(), 1)
	events := f.events()
	assert.Len(t, withReason(events, health.EventRemediationCreated), 1, "the create is told at once")
	assert.Len(t, withReason(events, "Enabled"), 1)
	assert.Empty(t, f.statuses.written, "the status is left to the next second's sync")

	created("worker-1")
	f.clock.Step(time.Second)
	d, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, time.Second, d)
	assert.Len(t, f.remediations.creates(), 2)
	events = f.events()
	assert.Len(t, withReason(events, health.EventRemediationCreated), 1)
	assert.Empty(t, withReason(events, "Enabled"), "decided from the status left to it: no transition told twice")
	require.Len(t, f.statuses.written, 1, "one status behind at most: written, with both seconds")
	remediated(t, "worker-0", "worker-1", "worker-2")

	created("worker-2")
	f.clock.Step(time.Second)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 3)
	require.Len(t, f.statuses.written, 2, "nothing due next: written at once")
	remediated(t, "worker-0", "worker-1", "worker-2", "worker-3")
}

// While the stored status shows the remediation guard no remediation, a
// sync creates one and writes its status at once, though more nodes are
// due and the next sync follows at once: the guard, which reads the stored
// status, is blind to one create at most, never to a storm's first batch
// left to the next sync.
func TestTheFirstCreateReachesTheStoredStatusBeforeTheNext(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), notReady("worker-2", longAgo),
		notReady("worker-3", longAgo), notReady("worker-4", t0.Add(time.Second-300*time.Second)))

	d, err := f.sync()
	require.NoError(t, err)
	require.Len(t, f.remediations.creates(), 1, "one create while the guard sees none")
	require.Len(t, f.statuses.written, 1, "its status written at once")
	status := f.lastStatus(t)
	assert.True(t, health.ShowsRemediation(&status), "the stored status shows the guard the remediation")
	assert.Equal(t, time.Millisecond, d, "the rest follow at once")

	created := f.remediations.creates()[0]
	f.remediations.seen.Remediations[created.Node] = []health.Remediation{{Ref: createdRef(created), TemplateName: snrTemplate.Name, Created: f.clock.Now()}}
	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 3, "the rest of the batch in one sync")
	assert.Len(t, f.statuses.written, 1, "left to the next second's sync, the guard seeing the first")
}

// A create whose status write failed is the last one until a status shows
// it: the next sync creates nothing, says why, writes the status, and only
// the sync after that goes on.
func TestNoCreateFollowsOneTheStoredStatusDoesNotShow(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), notReady("worker-2", longAgo))
	f.statuses.err = errors.New("etcdserver: request timed out")
	_, err := f.sync()
	require.Error(t, err)
	require.Len(t, f.remediations.creates(), 1)

	first := f.remediations.creates()[0]
	f.remediations.seen.Remediations[first.Node] = []health.Remediation{{Ref: createdRef(first), TemplateName: snrTemplate.Name, Created: f.clock.Now()}}
	f.statuses.err = nil
	d, err := f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 1, "no create while the stored status shows none")
	assert.Equal(t, notReadyRequeue, d)
	status := f.lastStatus(t)
	assert.True(t, health.ShowsRemediation(&status), "the status write shows the first")

	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 2, "then the next")
}

// remediating makes a node unhealthy since longAgo with a remediation that
// the stored status lists: the remediation guard sees the NodeHealthCheck
// remediate.
func (f *syncFixture) remediating(t *testing.T, nhc *v1alpha1.NodeHealthCheck, node string) {
	t.Helper()
	f.setNode(t, notReady(node, longAgo))
	ref := createdRef(health.Creation{Node: node, Template: snrTemplate})
	started := t0.Add(-time.Minute)
	f.remediations.seen.Remediations[node] = []health.Remediation{{Ref: ref, TemplateName: snrTemplate.Name, Created: started}}
	nhc.Status.UnhealthyNodes = append(nhc.Status.UnhealthyNodes, &v1alpha1.UnhealthyNode{Name: node, Remediations: []*v1alpha1.Remediation{
		{Resource: ref, Started: metav1.NewTime(started), TemplateName: snrTemplate.Name},
	}})
	f.setNHC(t, nhc)
}

// A sync that ends a node's incident (its remediation deleted on recovery)
// writes its status at once, though it also created one and the next sync
// is due within a second: the recovery mark is the only memory that a
// relapse starts afresh, and a status left unwritten can be lost.
func TestASyncThatEndsAnIncidentWritesItsStatusAtOnce(t *testing.T) {
	const condition = 300 * time.Second
	nhc := workersNHC()
	f := newSyncFixture(t, nhc, healthyNode("worker-1"), notReady("worker-2", t0.Add(-condition)),
		notReady("worker-3", t0.Add(time.Second-condition)))
	stepOfWorker1 := createdRef(health.Creation{Node: "worker-1", Template: snrTemplate})
	f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: stepOfWorker1, TemplateName: snrTemplate.Name, Created: t0.Add(-8 * time.Minute)}}
	nhc.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-1", Remediations: []*v1alpha1.Remediation{
		{Resource: stepOfWorker1, Started: metav1.NewTime(t0.Add(-8 * time.Minute)), TemplateName: snrTemplate.Name},
	}}}
	f.setNHC(t, nhc)

	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, time.Second, d, "worker-3 is due in a second")
	assert.Len(t, f.remediations.creates(), 1, "worker-2's remediation")
	require.Len(t, f.statuses.written, 1, "the recovery is recorded at once")
	entry := entryOf(f.lastStatus(t), "worker-1")
	require.NotNil(t, entry)
	assert.NotNil(t, entry.ConditionsHealthyTimestamp, "worker-1's recovery is marked")
}

// A sync that creates remediations never leaves to the next one a status
// that records a transition: a storm's start or end, a relapse's cleared
// mark. A failed write or a new leader would lose it, and the next sync
// would let that second's due nodes through the storm, or count the
// relapse's healthyDelay from the old recovery.
func TestASyncNeverLeavesATransitionToTheNext(t *testing.T) {
	remediating := v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "worker-0", Remediations: []*v1alpha1.Remediation{{}}}}}
	storm := *remediating.DeepCopy()
	storm.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStormActive, Status: metav1.ConditionTrue}}
	calm := *remediating.DeepCopy()
	calm.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStormActive, Status: metav1.ConditionFalse}}
	marked := *remediating.DeepCopy()
	marked.UnhealthyNodes[0].ConditionsHealthyTimestamp = &t0
	created := &health.Outcome{Created: []health.Created{{Creation: health.Creation{Node: "worker-1"}}}}
	for _, tc := range []struct {
		name           string
		stored, status v1alpha1.NodeHealthCheckStatus
		leaves         bool
	}{
		{"nothing but creates", remediating, remediating, true},
		{"a storm starts", remediating, storm, false},
		{"a storm ends", storm, calm, false},
		{"a recovery is marked", remediating, marked, false},
		{"a relapse clears the mark", marked, remediating, false},
	} {
		stored := workersNHC()
		stored.Status = tc.stored
		assert.Equal(t, tc.leaves, leavesStatus(stored, &tc.status, created, time.Second), tc.name)
	}
}

// The status is the controller's memory of an incident: which steps timed
// out. When the cache is behind the API server (a watch that stalls, a
// status write whose answer was lost), every write conflicts, and a sync
// deciding from the cache's status would run a step again once its
// resource is gone. A conflict, or a create's recheck that reads a newer
// NodeHealthCheck, makes the next sync read it at the API server and decide
// from it.
func TestASyncBehindTheAPIServerDecidesFromTheNodeHealthCheckThere(t *testing.T) {
	for _, seen := range []string{"a status write conflicts", "a create is rechecked"} {
		t.Run(seen, func(t *testing.T) {
			nhc := workersNHC()
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
			stored := nhc.DeepCopy()
			stored.ResourceVersion = "7"
			stored.Status = remediatedStatus(longAgo)
			stored.Status.UnhealthyNodes[0].Remediations[0].TimedOut = &metav1.Time{Time: longAgo}
			f.liveNHCs.live = map[string]*v1alpha1.NodeHealthCheck{"workers": stored}
			if seen == "a status write conflicts" {
				f.remediating(t, nhc, "worker-1")
				f.statuses.err = apierrors.NewConflict(v1alpha1.Resource("nodehealthchecks"), "workers", errors.New("the object has been modified"))
				_, err := f.sync()
				require.True(t, apierrors.IsConflict(err), "got %v", err)
				f.statuses.err = nil
				f.remediations.seen.Remediations = map[string][]health.Remediation{}
			}

			_, err := f.sync()
			require.NoError(t, err)
			_, err = f.sync()
			require.NoError(t, err)
			assert.Empty(t, f.remediations.creates(), "the step that timed out at the API server is not run again")
			assert.Equal(t, 1, f.liveNHCs.gets, "one read of the whole NodeHealthCheck")
			written := f.statuses.written[len(f.statuses.written)-1]
			assert.Equal(t, "8", written.ResourceVersion, "written on the resourceVersion read")
			require.NotNil(t, entryOf(written.Status, "worker-1"))
			assert.NotNil(t, entryOf(written.Status, "worker-1").Remediations[0].TimedOut, "the time-out kept")
		})
	}
}
