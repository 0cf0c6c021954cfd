package controller

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestSyncForgetsAGoneNodeHealthCheck(t *testing.T) {
	f := newSyncFixture(t, nil)
	d, err := f.sync()
	require.NoError(t, err)
	assert.Zero(t, d)
	assert.Equal(t, []string{"workers"}, f.remediations.forgotten)
	assert.Empty(t, f.statuses.written)
}

// The status records only what was created.
func TestSyncRecordsOnlyWhatWasCreated(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name      string
		createErr error
		created   bool
	}{
		{"a failed create", boom, false},
		{"a successful create", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.remediations.createErr = tc.createErr
			_, err := f.sync()
			assert.ErrorIs(t, err, tc.createErr)
			assert.Len(t, f.remediations.creates(), 1, "the sync creates a remediation")
			status := f.lastStatus(t)
			entry := entryOf(status, "worker-1")
			require.NotNil(t, entry, "an unhealthy node is listed either way")
			created := withReason(f.events(), health.EventRemediationCreated)
			var ongoing dto.Metric
			require.NoError(t, f.metrics.ongoing.WithLabelValues("worker-1", "snr", "SelfNodeRemediation").Write(&ongoing))
			if !tc.created {
				assert.Empty(t, entry.Remediations)
				assert.Equal(t, int32(0), *status.RemediatingNodes)
				assert.Equal(t, v1alpha1.PhaseEnabled, status.Phase)
				assert.Empty(t, created)
				assert.Zero(t, ongoing.GetGauge().GetValue(), "nodehealthcheck_ongoing_remediation")
				return
			}
			require.Len(t, entry.Remediations, 1)
			rem := entry.Remediations[0]
			assert.Equal(t, snrOfWorker, rem.Resource)
			assert.NotEmpty(t, rem.Resource.UID)
			assert.Equal(t, t0.Time, rem.Started.Time)
			assert.Nil(t, rem.TimedOut)
			assert.Equal(t, int32(1), *status.RemediatingNodes)
			assert.Equal(t, v1alpha1.PhaseRemediating, status.Phase)
			assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node worker-1"}, created)
			assert.Equal(t, 1.0, ongoing.GetGauge().GetValue(), "nodehealthcheck_ongoing_remediation")
		})
	}
}

// A step is timed out in the status only once its annotation was written:
// after a failed annotation, the step still runs and the next one waits.
func TestSyncRecordsATimeOutOnlyOnceAnnotated(t *testing.T) {
	annotationFailed := errors.New("annotating: forbidden")
	cases := []struct {
		name        string
		annotateErr error
		timedOut    bool
	}{
		{"a failed annotation", annotationFailed, false},
		{"a successful annotation", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := workersNHC()
			nhc.Spec.RemediationTemplate = nil
			nhc.Spec.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
				{RemediationTemplate: snrTemplate, Order: 1, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
				{RemediationTemplate: mdrTemplate, Order: 2, Timeout: metav1.Duration{Duration: 10 * time.Minute}},
			}
			started := t0.Add(-10 * time.Minute)
			nhc.Status = remediatedStatus(started)
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
			f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: snrOfWorker, TemplateName: snrTemplate.Name, Created: started}}
			f.remediations.annotateErr = tc.annotateErr

			_, err := f.sync()
			require.Len(t, f.remediations.syncs, 1)
			require.Len(t, f.remediations.syncs[0].annotations, 1, "the sync times the SNR out")
			assert.Equal(t, v1alpha1.TimedOutAnnotation, f.remediations.syncs[0].annotations[0].key)
			if !tc.timedOut {
				assert.Empty(t, f.remediations.creates(), "no next step")
			}
			entry := entryOf(f.lastStatus(t), "worker-1")
			require.NotNil(t, entry)
			timedOut := withReason(f.events(), health.EventRemediationTimedOut)
			if !tc.timedOut {
				assert.ErrorIs(t, err, annotationFailed)
				require.Len(t, entry.Remediations, 1)
				assert.Nil(t, entry.Remediations[0].TimedOut, "the status claims a time-out that did not happen")
				assert.Empty(t, timedOut)
				return
			}
			require.NoError(t, err)
			require.Len(t, entry.Remediations, 2)
			require.NotNil(t, entry.Remediations[0].TimedOut)
			assert.Equal(t, t0.Time, entry.Remediations[0].TimedOut.Time)
			assert.Equal(t, "MachineDeletionRemediation", entry.Remediations[1].Resource.Kind)
			assert.Len(t, timedOut, 1)
		})
	}
}

func TestSyncWritesNothingWithoutTheLease(t *testing.T) {
	// A replica whose lease renewal failed may already have been replaced: it
	// must neither remediate nor write the status, and it retries.
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	lost := errors.New("the last lease renewal failed")
	f.guardWrites(func() (time.Time, error) { return time.Time{}, lost })
	_, err := f.sync()
	assert.ErrorIs(t, err, lost)
	noActions(t, f)
	assert.Empty(t, f.statuses.written, "no status")
	assert.Empty(t, f.events(), "no event")

	f.guardWrites(func() (time.Time, error) { return time.Now().Add(time.Minute), nil })
	_, err = f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), 1, "renewed: it acts again")
}

// A leader's writes end when it can no longer show that it holds the
// lease: the context of every write ends then, and a create is not sent
// once the lease cannot be shown, even within the sync that planned it.
func TestWritesEndWithTheLease(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	leases := f.takeLeases(nil)
	until := time.Now().Add(7 * time.Second)
	calls := 0
	lost := errors.New("the last lease renewal failed")
	f.guardWrites(func() (time.Time, error) {
		calls++
		if calls > 1 {
			return time.Time{}, lost
		}
		return until, nil
	})
	_, err := f.sync()
	assert.ErrorIs(t, err, lost)
	require.Len(t, leases.deadlines, 1, "the node lease taken")
	assert.Equal(t, until, leases.deadlines[0], "the writes end with the lease")
	assert.Empty(t, withReason(f.events(), "RemediationCreated"), "the create is not sent: the lease could not be shown just before")
	assert.Empty(t, f.statuses.written, "nor the status")
}

func TestSyncRechecksEachCreateAgainstTheCachesOfThatMoment(t *testing.T) {
	// A sync decides, then creates one resource after another; meanwhile the
	// cluster moves on. Each create is sent only if the caches of that moment
	// still show the need.
	paused := workersNHC()
	paused.Generation, paused.ResourceVersion = 2, "2"
	paused.Spec.PauseRequests = []string{"maintenance by @admin"}
	excluded := notReady("worker-1", longAgo)
	excluded.Labels[v1alpha1.ExcludeFromRemediationLabel] = "true"
	cases := []struct {
		name   string
		change func(*testing.T, *syncFixture)
	}{
		{"the node recovered", func(t *testing.T, f *syncFixture) { f.setNode(t, healthyNode("worker-1")) }},
		{"the node got the exclude label", func(t *testing.T, f *syncFixture) { f.setNode(t, excluded) }},
		{"the NodeHealthCheck was paused", func(t *testing.T, f *syncFixture) { f.setNHC(t, paused) }},
		{"the node was deleted", func(t *testing.T, f *syncFixture) {
			require.NoError(t, f.nodes.Delete(nodeview.Of(healthyNode("worker-1"), nil)))
			f.c.members.Update("worker-1")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			leases := f.takeLeases(func() { tc.change(t, f) })
			requeue, err := f.sync()
			require.NoError(t, err)
			assert.Len(t, leases.deadlines, 1, "the plan wanted it: its node lease was taken")
			assert.Empty(t, f.remediations.creates(), "nothing was sent")
			assert.Empty(t, withReason(f.events(), health.EventRemediationCreated), "nothing was created")
			assert.Empty(t, entryOf(f.lastStatus(t), "worker-1").Remediations)
			assert.Equal(t, time.Millisecond, requeue, "the next sync decides again at once")
		})
	}
}

func TestAStormsCreatesGoOutAFewDozenAtATime(t *testing.T) {
	// Every create in flight holds three goroutines and its requests'
	// buffers: a storm's all at once made the controller's memory peak.
	nodes := make([]*corev1.Node, 201)
	for i := range nodes {
		nodes[i] = notReady(fmt.Sprintf("worker-%d", i), longAgo)
	}
	nhc := workersNHC()
	f := newSyncFixture(t, nhc, nodes...)
	f.remediating(t, nhc, "worker-0") // so the stored status guards the rest
	var mu sync.Mutex
	inFlight, most := 0, 0
	f.takeLeases(func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
	})
	_, err := f.sync()
	require.NoError(t, err)
	assert.Len(t, f.remediations.creates(), len(nodes)-1, "every other node remediated")
	assert.LessOrEqual(t, most, createsInFlight, "creates in flight at once")
	assert.Greater(t, most, 1, "yet together")
}

// A node whose create a webhook refuses waits a back-off, and the others
// are remediated meanwhile: while the status shows no remediation one
// create goes a sync, for the node unhealthy longest, which would
// otherwise be the refused one every time.
func TestANodeWhoseCreateIsRefusedHoldsNoOtherBack(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), notReady("worker-2", longAgo.Add(time.Second)), healthyNode("worker-3"))
	refused := apierrors.NewInvalid(schema.GroupKind{Group: "remediation.medik8s.io", Kind: "SelfNodeRemediation"}, "worker-1",
		field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "worker-1", "denied by the remediator's webhook")})
	f.remediations.createErrOf = map[string]error{"worker-1": refused}
	nodesCreated := func() []string {
		var nodes []string
		for _, c := range f.remediations.creates() {
			nodes = append(nodes, c.Node)
		}
		return nodes
	}

	_, err := f.sync()
	require.ErrorIs(t, err, refused)
	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1", "worker-2"}, nodesCreated(), "the other node goes while the refused one waits")
	assert.Equal(t, time.Second, d, "the refused node is tried again a second after")
	entry := entryOf(f.lastStatus(t), "worker-2")
	require.NotNil(t, entry)
	assert.Len(t, entry.Remediations, 1)
	created := f.remediations.creates()[1]
	f.remediations.seen.Remediations["worker-2"] = []health.Remediation{{Ref: createdRef(created), TemplateName: snrTemplate.Name, Created: f.clock.Now()}}

	f.clock.Step(time.Second)
	_, err = f.sync()
	require.ErrorIs(t, err, refused)
	d, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, []string{"worker-1", "worker-2", "worker-1"}, nodesCreated())
	assert.Equal(t, 2*time.Second, d, "and then after a back-off that doubles")
}

// A refused create is tried again after its node's back-off, not a minute
// later: nothing else would wake its NodeHealthCheck.
func TestARefusedNodeIsTriedAgainAfterItsBackOff(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"), healthyNode("worker-3"))
	leases := f.takeLeases(nil)
	leases.refusal = "the node lease is out of reach"
	var tries []time.Duration
	for f.clock.Since(t0.Time) <= 45*time.Second {
		before := len(leases.deadlines)
		d, err := f.sync()
		require.NoError(t, err)
		if len(leases.deadlines) > before {
			tries = append(tries, f.clock.Since(t0.Time))
		}
		require.NotZero(t, d, "the sync wakes again")
		f.clock.Step(d)
	}
	assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 30 * time.Second, 45 * time.Second}, tries)
}
