package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// incidentStep is one change of a node's incident, as the caches show it,
// followed by a sync.
type incidentStep struct {
	name   string
	change func(t *testing.T, f *syncFixture)
	// written says what the status written in the step shows; nil when
	// the step writes nothing.
	written func(t *testing.T, status v1alpha1.NodeHealthCheckStatus)
}

// Each status write of an incident shows something new: a node failed, its
// remediation started, it recovered and its resource is being deleted, it
// ended. The sync that deletes the resource on the recovery records the
// recovery alone (conditionsHealthyTimestamp): the caches show the deletion
// a moment later, and a deletion held by a finalizer adds nothing to write.
func TestSyncWritesEachStepOfAnIncidentOnce(t *testing.T) {
	countsOnly := func(t *testing.T, status v1alpha1.NodeHealthCheckStatus) {
		assert.Equal(t, ptr.To(int32(1)), status.HealthyNodes)
		assert.Empty(t, status.UnhealthyNodes)
	}
	remediating := func(t *testing.T, status v1alpha1.NodeHealthCheckStatus) {
		assert.Equal(t, v1alpha1.PhaseRemediating, status.Phase)
		require.NotNil(t, entryOf(status, "worker-1"))
		assert.Len(t, entryOf(status, "worker-1").Remediations, 1)
		assert.Nil(t, entryOf(status, "worker-1").ConditionsHealthyTimestamp)
	}
	recovered := func(t *testing.T, status v1alpha1.NodeHealthCheckStatus) {
		require.NotNil(t, entryOf(status, "worker-1"))
		assert.Len(t, entryOf(status, "worker-1").Remediations, 1, "until the caches show it gone")
		assert.NotNil(t, entryOf(status, "worker-1").ConditionsHealthyTimestamp, "healthy, its resource deleted")
	}
	ended := func(t *testing.T, status v1alpha1.NodeHealthCheckStatus) {
		assert.Equal(t, v1alpha1.PhaseEnabled, status.Phase)
		assert.Equal(t, ptr.To(int32(2)), status.HealthyNodes)
		assert.Empty(t, status.UnhealthyNodes)
		require.Len(t, status.RemediationHistory, 1)
		assert.Equal(t, v1alpha1.OutcomeRecovered, status.RemediationHistory[0].Outcome)
	}
	fails := incidentStep{"Ready=False", func(t *testing.T, f *syncFixture) { f.setNode(t, notReady("worker-1", t0.Time)) }, countsOnly}
	deadline := incidentStep{"the deadline passes: created", func(_ *testing.T, f *syncFixture) { f.clock.Step(300 * time.Second) }, remediating}
	cached := incidentStep{"the informer shows the resource", func(_ *testing.T, f *syncFixture) {
		f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: snrOfWorker, TemplateName: snrTemplate.Name, Created: f.clock.Now()}}
	}, nil}
	recovers := incidentStep{"Ready=True: deleted", func(t *testing.T, f *syncFixture) { f.setNode(t, healthyNode("worker-1")) }, recovered}
	unobserved := incidentStep{"the informer does not show the deletion yet", func(_ *testing.T, f *syncFixture) {
		f.remediations.seen.Pending = map[string]bool{"worker-1": true}
	}, nil}
	gone := incidentStep{"the informer shows it gone", func(_ *testing.T, f *syncFixture) {
		f.remediations.seen.Pending = nil
		delete(f.remediations.seen.Remediations, "worker-1")
	}, ended}
	finalizer := incidentStep{"the informer shows it held by a finalizer", func(_ *testing.T, f *syncFixture) {
		f.remediations.seen.Pending = nil
		f.remediations.seen.Remediations["worker-1"][0].Deleting = true
	}, nil}

	cases := []struct {
		name  string
		steps []incidentStep
	}{
		{"deleted at once", []incidentStep{fails, deadline, cached, recovers, unobserved, gone}},
		{"deletion held by a finalizer", []incidentStep{fails, deadline, cached, recovers, unobserved, finalizer, gone}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), healthyNode("worker-1"), healthyNode("worker-2"))
			_, err := f.sync()
			require.NoError(t, err)
			for _, step := range tc.steps {
				before := len(f.statuses.written)
				step.change(t, f)
				_, err := f.sync()
				require.NoError(t, err, step.name)
				if step.written == nil {
					assert.Len(t, f.statuses.written, before, "%s: a write that shows nothing new", step.name)
					continue
				}
				require.Len(t, f.statuses.written, before+1, step.name)
				t.Run(step.name, func(t *testing.T) { step.written(t, f.lastStatus(t)) })
				// The informer shows the write.
				f.setNHC(t, f.statuses.written[len(f.statuses.written)-1].DeepCopy())
			}
		})
	}
}
