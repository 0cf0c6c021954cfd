package controller

import (
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// A node's first remediation is confirmed against the node as the API
// server has it: a node the lagging cache still shows unhealthy, but the API
// server shows recovered, gets none, and the skip is counted and said.
func TestAFirstRemediationIsConfirmedAtTheAPIServer(t *testing.T) {
	tests := []struct {
		name string
		// live is worker-1 at the API server; nil: gone.
		live    *corev1.Node
		readErr error
		// created, notConfirmed, failed: what the sync does.
		created, notConfirmed, failed bool
	}{
		{name: "unhealthy there too", live: notReady("worker-1", longAgo), created: true},
		{name: "recovered there", live: healthyNode("worker-1"), notConfirmed: true},
		{name: "deleted there", live: nil, notConfirmed: true},
		{name: "the read fails", readErr: apierrors.NewServiceUnavailable("overloaded"), failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.liveNodes.live, f.liveNodes.err = map[string]*corev1.Node{"worker-2": healthyNode("worker-2")}, tt.readErr
			if tt.live != nil {
				f.liveNodes.live["worker-1"] = tt.live
			}
			d, err := f.sync()
			assert.Equal(t, 1, f.liveNodes.reads, "one read, just before the create")
			assert.Equal(t, tt.failed, err != nil, "%v", err)
			status := f.lastStatus(t)
			assert.Equal(t, tt.created, entryOf(status, "worker-1") != nil && len(entryOf(status, "worker-1").Remediations) == 1)
			events := withReason(f.events(), "RemediationNotConfirmed")
			var counted dto.Metric
			require.NoError(t, f.metrics.notConfirmed.WithLabelValues("workers").Write(&counted))
			if !tt.notConfirmed {
				assert.Empty(t, events)
				assert.Zero(t, counted.GetCounter().GetValue())
				return
			}
			require.Len(t, events, 1)
			assert.Contains(t, events[0], "Remediation of node worker-1 not started: at the API server, ")
			assert.Equal(t, 1.0, counted.GetCounter().GetValue())
			assert.Positive(t, d)
			assert.LessOrEqual(t, d, time.Second, "tried again soon, if no node update comes first")
		})
	}
}

// An escalation step is a new remediation too (a power-off after a reboot):
// it is confirmed at the API server as a first remediation is.
func TestAnEscalationStepIsConfirmedAtTheAPIServer(t *testing.T) {
	nhc := workersNHC()
	nhc.Spec.RemediationTemplate = nil
	nhc.Spec.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
		{RemediationTemplate: snrTemplate, Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
		{RemediationTemplate: mdrTemplate, Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
	}
	// The first step runs on worker-1, past its timeout.
	nhc.Status = remediatedStatus(longAgo)
	for _, tt := range []struct {
		name    string
		live    *corev1.Node
		created bool
	}{
		{"unhealthy there too", notReady("worker-1", longAgo), true},
		{"recovered there", healthyNode("worker-1"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncFixture(t, nhc.DeepCopy(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.liveNodes.live = map[string]*corev1.Node{"worker-1": tt.live, "worker-2": healthyNode("worker-2")}
			f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: snrOfWorker, TemplateName: snrTemplate.Name, Created: longAgo}}
			_, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, 1, f.liveNodes.reads, "one read, just before the create")
			assert.Equal(t, tt.created, len(withReason(f.events(), "RemediationCreated")) == 1)
			if tt.created {
				require.Len(t, f.remediations.creates(), 1)
				assert.True(t, f.remediations.creates()[0].Escalation, "the next step")
			} else {
				assert.Empty(t, f.remediations.creates())
			}
		})
	}
}

// A create is confirmed against the NodeHealthCheck as the API server has
// it, once a sync: a watch that lags or went silent must not remediate from
// a spec the operator already changed (paused, edited, deleted), nor from
// an old status, the controller's memory of the incident.
func TestACreateIsConfirmedAgainstTheNodeHealthCheckAtTheAPIServer(t *testing.T) {
	paused := workersNHC()
	paused.Generation++
	paused.Spec.PauseRequests = []string{"maintenance"}
	recreated := workersNHC()
	recreated.UID = "recreated"
	statusWritten := workersNHC()
	statusWritten.ResourceVersion = "2"
	tests := []struct {
		name string
		// live is the NodeHealthCheck at the API server; nil: gone.
		live    *v1alpha1.NodeHealthCheck
		created bool
	}{
		{"unchanged there", workersNHC(), true},
		{"paused there", paused, false},
		{"deleted there", nil, false},
		{"deleted and created again there", recreated, false},
		{"its status written there since", statusWritten, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nhc := workersNHC()
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo), notReady("worker-2", longAgo), healthyNode("worker-3"))
			f.remediating(t, nhc, "worker-4")
			f.liveNHCs.live = map[string]*v1alpha1.NodeHealthCheck{}
			if tt.live != nil {
				f.liveNHCs.live["workers"] = tt.live
			}
			_, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, 1, f.liveNHCs.reads, "one read a sync")
			status := f.lastStatus(t)
			for _, node := range []string{"worker-1", "worker-2"} {
				assert.Equal(t, tt.created, entryOf(status, node) != nil && len(entryOf(status, node).Remediations) == 1, node)
			}
			assert.Equal(t, !tt.created, len(withReason(f.events(), "RemediationNotConfirmed")) > 0)
		})
	}
}

// A create's node is read at the API server while its lease is taken, not
// after it: under load each is a wait there, and the create waits for both.
func TestACreatesLeaseAndConfirmationGoOutTogether(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	readWhileLeasing := false
	leases := f.takeLeases(func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			f.liveNodes.readsMu.Lock()
			reads := f.liveNodes.reads
			f.liveNodes.readsMu.Unlock()
			if reads > 0 {
				readWhileLeasing = true
				return
			}
		}
	})
	_, err := f.sync()
	require.NoError(t, err)
	assert.True(t, readWhileLeasing, "the node was read at the API server while its lease was taken")
	assert.Len(t, leases.deadlines, 1)
	assert.Len(t, f.remediations.creates(), 1, "sent once both were done")
}

// A create's two reads at the API server, of its node and of the
// NodeHealthCheck, go out together: under load each is a wait, and a storm's
// creates would wait for both one after the other. Here the NodeHealthCheck's
// read answers only once the node's read has started.
func TestACreateReadsItsNodeBesideTheNodeHealthCheck(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	nodeReadStarted := make(chan struct{})
	var once sync.Once
	f.liveNodes.onRead = func() { once.Do(func() { close(nodeReadStarted) }) }
	f.liveNHCs.answerAfter = nodeReadStarted

	_, err := f.sync()
	require.NoError(t, err)
	entry := entryOf(f.lastStatus(t), "worker-1")
	require.NotNil(t, entry)
	assert.Len(t, entry.Remediations, 1)
}

// A sync's creates read their nodes as the API server has them: the first
// consistently at the API server, and the others, once it is answered,
// from the node cache when it holds that revision, else at the API server
// at least as new as it, which its cache serves without waiting for a
// revision of its own. A first read that fails leaves the others
// consistent.
func TestASyncsNodeReadsAreAtLeastAsNewAsItsFirst(t *testing.T) {
	for _, tt := range []struct {
		name    string
		readErr error
		// cacheHolds is the revision the node cache holds.
		cacheHolds string
		want       []string
	}{
		{"answered, the cache behind", nil, "76", []string{"", fakeRevision, fakeRevision}},
		{"answered, the cache holding it", nil, fakeRevision, []string{""}},
		{"answered, the cache ahead", nil, "78", []string{""}},
		{"failed", apierrors.NewServiceUnavailable("overloaded"), fakeRevision, []string{"", "", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nhc := workersNHC()
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo), notReady("worker-2", longAgo),
				notReady("worker-3", longAgo), healthyNode("worker-4"))
			f.remediating(t, nhc, "worker-5")
			f.nodes.Bookmark(tt.cacheHolds)
			f.liveNodes.err = tt.readErr
			_, err := f.sync()
			assert.Equal(t, tt.readErr != nil, err != nil, "%v", err)
			assert.Equal(t, tt.want, f.liveNodes.notOlderThan)
			if tt.readErr == nil {
				assert.Len(t, f.remediations.creates(), 3)
			}
		})
	}
}

// A node that confirmed a create at the API server is decided from as
// confirmed while the node cache shows it older: a watch that went silent
// and then delivers its backlog one event at a time shows, between two,
// a recovery that ended before the create, and the remediation just
// confirmed must not be deleted for it (and its incident started over).
// Once the cache shows the node as new, or newer, the cache decides.
func TestANodeThatConfirmedACreateIsNotSeenOlder(t *testing.T) {
	const condition = 300 * time.Second
	version := func(n *corev1.Node, rv string) *corev1.Node {
		n.ResourceVersion = rv
		return n
	}
	nhc := workersNHC()
	f := newSyncFixture(t, nhc, version(notReady("worker-1", t0.Add(-condition)), "10"))
	f.liveNodes.live = map[string]*corev1.Node{"worker-1": version(notReady("worker-1", t0.Add(-condition)), "20")}
	_, err := f.sync()
	require.NoError(t, err)
	require.Len(t, f.remediations.creates(), 1, "confirmed at the API server")
	f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: snrOfWorker, TemplateName: snrTemplate.Name, Created: t0.Time}}

	// The backlog: the node healthy, before the version that confirmed
	// the create.
	f.setNode(t, version(healthyNode("worker-1"), "15"))
	f.clock.Step(time.Second)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, withReason(f.events(), health.EventRemediationRemoved), "a recovery older than the create")
	entry := entryOf(f.lastStatus(t), "worker-1")
	require.NotNil(t, entry)
	assert.Nil(t, entry.ConditionsHealthyTimestamp, "no recovery is marked")

	// The node recovers after the create.
	f.setNode(t, version(healthyNode("worker-1"), "25"))
	f.clock.Step(time.Second)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, withReason(f.events(), health.EventRemediationRemoved), 1, "the recovery the cache shows newer")
}

// A deleted node's confirmed copy is forgotten: no sync reads it again, so
// the copies held are of nodes that exist.
func TestADeletedNodesConfirmedCopyIsForgotten(t *testing.T) {
	const condition = 300 * time.Second
	node := notReady("worker-1", t0.Add(-condition))
	node.ResourceVersion = "10"
	f := newSyncFixture(t, workersNHC(), node)
	live := notReady("worker-1", t0.Add(-condition))
	live.ResourceVersion = "20"
	f.liveNodes.live = map[string]*corev1.Node{"worker-1": live}
	_, err := f.sync()
	require.NoError(t, err)
	require.Len(t, f.c.newer.newer, 1, "the confirmed copy, newer than the cache's")

	f.c.handlers.deleteNode(klog.Background(), nodeview.Of(node, nil))
	assert.Empty(t, f.c.newer.newer)
}
