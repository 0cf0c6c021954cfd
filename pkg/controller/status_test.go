package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// In a storm, nodes that failed a second apart are due a second apart: the
// sync that creates the first second's remediations leaves its status to the
// next second's sync, which then does not wait for that write, and which
// writes both; a status is never more than one sync behind.
func TestASyncThatCreatedLeavesItsStatusToTheNextSecondsSync(t *testing.T) {
	const condition = 300 * time.Second
	second := func(n int) time.Time { return t0.Add(time.Duration(n)*time.Second - condition) }
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", second(0)), notReady("worker-2", second(1)),
		notReady("worker-3", second(2)), healthyNode("worker-4"))
	created := func(node string) {
		ref := createdRef(health.Creation{Node: node, Template: snrTemplate})
		f.remediations.obs.Remediations[node] = []health.Remediation{{Ref: ref, TemplateName: snrTemplate.Name, Created: f.clock.Now()}}
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
	remediated(t, "worker-1", "worker-2")

	created("worker-2")
	f.clock.Step(time.Second)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 3)
	require.Len(t, f.statuses.written, 2, "nothing due next: written at once")
	remediated(t, "worker-1", "worker-2", "worker-3")
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
	f.remediations.obs.Remediations["worker-1"] = []health.Remediation{{Ref: stepOfWorker1, TemplateName: snrTemplate.Name, Created: t0.Add(-8 * time.Minute)}}
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
