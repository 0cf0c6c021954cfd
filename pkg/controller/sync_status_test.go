package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The fixtures below are shared by the sync tests (sync_*_test.go) and
// other tests of this package.
var (
	mdrTemplate = corev1.ObjectReference{APIVersion: "machine-deletion-remediation.medik8s.io/v1alpha1", Kind: "MachineDeletionRemediationTemplate", Namespace: "snr", Name: "mdr"}
	snrOfWorker = createdRef(health.Creation{Node: "worker-1", Template: snrTemplate})
	// longAgo is well past the 300s of the unhealthy condition.
	longAgo = t0.Add(-20 * time.Minute)
)

// remediatedStatus is a status that lists worker-1 with a running SNR.
func remediatedStatus(started time.Time) v1alpha1.NodeHealthCheckStatus {
	return v1alpha1.NodeHealthCheckStatus{
		Phase: v1alpha1.PhaseRemediating,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionDisabled, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonEnabled, LastTransitionTime: metav1.NewTime(longAgo)}},
		UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "worker-1", Remediations: []*v1alpha1.Remediation{
			{Resource: snrOfWorker, Started: metav1.NewTime(started), TemplateName: snrTemplate.Name}}}},
	}
}

// noActions asserts that no remediation was created nor annotated.
func noActions(t *testing.T, f *syncFixture) {
	t.Helper()
	for _, s := range f.remediations.syncs {
		assert.Empty(t, s.creates, "creations")
		assert.Empty(t, s.annotations, "annotations")
	}
}

// A template that cannot be watched disables the NodeHealthCheck, but the
// remediations on record stay: they cannot be read, not known to be gone.
func TestSyncDisablesOnATemplateProblemKeepingTheRecord(t *testing.T) {
	nhc := workersNHC()
	nhc.Status = remediatedStatus(longAgo)
	f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
	problem := &health.Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "Remediation template SelfNodeRemediationTemplate snr/automatic cannot be read: forbidden"}
	f.remediations.seen.Ready, f.remediations.seen.Problem = false, problem

	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, problemRequeue, d)
	status := f.lastStatus(t)
	assert.Equal(t, v1alpha1.PhaseDisabled, status.Phase)
	disabled := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionDisabled)
	require.NotNil(t, disabled)
	assert.Equal(t, metav1.ConditionTrue, disabled.Status)
	assert.Equal(t, v1alpha1.ReasonTemplateNotFound, disabled.Reason)
	assert.Equal(t, nhc.Status.UnhealthyNodes, status.UnhealthyNodes)
	assert.Equal(t, []string{"Warning Disabled [remediation] Disabling NHC. Reason: RemediationTemplateNotFound, Message: " + problem.Message}, f.events())

	// The problem lasts: no second event, no second write.
	d, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, problemRequeue, d)
	assert.Len(t, f.statuses.written, 1)
	assert.Empty(t, f.events())
	noActions(t, f)
}

// A spec the API server stored but that cannot be used disables the
// NodeHealthCheck: an unhealthy node gets no remediation.
func TestSyncDisablesOnASpecProblem(t *testing.T) {
	cases := []struct {
		name    string
		spec    func(*v1alpha1.NodeHealthCheckSpec)
		message string
	}{
		{"duplicate escalation order", func(s *v1alpha1.NodeHealthCheckSpec) {
			s.RemediationTemplate = nil
			s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
				{RemediationTemplate: snrTemplate, Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
				{RemediationTemplate: mdrTemplate, Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			}
		}, "order values must be unique"},
		{"invalid minHealthy", func(s *v1alpha1.NodeHealthCheckSpec) { s.MinHealthy = ptr.To(intstr.FromString("half")) }, "minHealthy must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := workersNHC()
			tc.spec(&nhc.Spec)
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
			_, err := f.sync()
			require.NoError(t, err)
			status := f.lastStatus(t)
			assert.Equal(t, v1alpha1.PhaseDisabled, status.Phase)
			disabled := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionDisabled)
			require.NotNil(t, disabled)
			assert.Equal(t, metav1.ConditionTrue, disabled.Status)
			assert.Equal(t, v1alpha1.ReasonInvalidSpec, disabled.Reason)
			assert.Contains(t, disabled.Message, tc.message)
			assert.Empty(t, entryOf(status, "worker-1").Remediations)
			events := f.events()
			assert.Len(t, withReason(events, health.EventDisabled), 1)
			assert.Empty(t, withReason(events, health.EventRemediationCreated))
			noActions(t, f)
		})
	}
}

// An unchanged status is not written again, whether the informer has shown
// the last write or not; lastUpdateTime alone is no change.
func TestSyncWritesAChangedStatusOnly(t *testing.T) {
	for _, listerCatchesUp := range []bool{true, false} {
		t.Run(map[bool]string{true: "the lister shows the write", false: "the lister is stale"}[listerCatchesUp], func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), healthyNode("worker-1"), notReady("worker-2", t0.Add(-10*time.Second)))
			_, err := f.sync()
			require.NoError(t, err)
			require.Len(t, f.statuses.written, 1)
			if listerCatchesUp {
				f.setNHC(t, f.statuses.written[0].DeepCopy())
			}
			f.clock.Step(time.Minute)
			_, err = f.sync()
			require.NoError(t, err)
			assert.Len(t, f.statuses.written, 1, "the second sync wrote an unchanged status")
		})
	}
}

// A sync that runs before the informer shows the last status write decides
// from that write, and from the informer's object once it is as new.
func TestSyncReadsItsOwnWrites(t *testing.T) {
	stale := workersNHC()
	f := newSyncFixture(t, stale, notReady("worker-1", longAgo))
	_, err := f.sync()
	require.NoError(t, err)
	assert.Len(t, withReason(f.events(), health.EventDetectedUnhealthy), 1)
	written := f.statuses.written[0]

	// The remediation informer shows the created SNR; the lister still has
	// the object without a status.
	rem := entryOf(written.Status, "worker-1").Remediations[0]
	f.remediations.seen.Remediations["worker-1"] = []health.Remediation{{Ref: rem.Resource, TemplateName: rem.TemplateName, Created: rem.Started.Time}}
	f.clock.Step(time.Minute)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, f.events(), "the node was detected and the NodeHealthCheck enabled before")
	assert.Empty(t, f.remediations.syncs[1].creates, "the remediation on record is not created again")
	assert.Len(t, f.statuses.written, 1)

	// The lister catches up with a newer object (a pause request): it wins.
	newer := written.DeepCopy()
	newer.ResourceVersion, newer.Generation = "3", 2
	newer.Spec.PauseRequests = []string{"upgrade"}
	f.setNHC(t, newer)
	_, err = f.sync()
	require.NoError(t, err)
	require.Len(t, f.statuses.written, 2)
	last := f.statuses.written[1]
	assert.Equal(t, "4", last.ResourceVersion, "the write is based on the lister's object")
	assert.Equal(t, v1alpha1.PhasePaused, last.Status.Phase)
	assert.Equal(t, int64(2), last.Status.ObservedGeneration)
}

// A lasting reason to skip remediation is recorded when it appears, not at
// every sync.
func TestSyncRecordsLastingSkipEventsOnce(t *testing.T) {
	nhc := workersNHC()
	nhc.Spec.PauseRequests = []string{"upgrade"}
	f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
	paused := "Normal RemediationSkipped [remediation] Postponing potential remediations because of pause requests"
	skipped := func() []string { return withReason(f.events(), health.EventRemediationSkipped) }

	steps := []struct {
		node *corev1.Node
		want []string
	}{
		{nil, []string{paused}},
		{nil, nil},                     // still paused: no second event
		{healthyNode("worker-1"), nil}, // nobody waits
		{notReady("worker-1", longAgo), []string{paused}}, // waiting again
	}
	for i, step := range steps {
		if step.node != nil {
			f.setNode(t, step.node)
		}
		f.clock.Step(time.Minute)
		_, err := f.sync()
		require.NoError(t, err)
		assert.Equal(t, step.want, skipped(), "sync %d", i+1)
	}
	noActions(t, f)
}

func TestSyncReportsAnUnreadableNodeHealthCheckOnItsOwn(t *testing.T) {
	// Stored under an older, looser CRD, it cannot be decoded: the informer
	// caches a placeholder with the error.
	f := newSyncFixture(t, nil, notReady("worker-1", longAgo))
	placeholder := &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "workers", UID: "uid-workers", ResourceVersion: "7", Generation: 2,
		Annotations: map[string]string{unreadableAnnotation: `spec.unhealthyConditions[0].duration: time: invalid duration "9999999h"`}}}
	f.setNHC(t, placeholder)
	requeue, err := f.sync()
	require.NoError(t, err)
	assert.Zero(t, requeue)
	noActions(t, f)
	assert.Empty(t, f.statuses.written, "never written back whole")
	require.Len(t, f.statuses.patched, 1)
	status := f.statuses.patched[0]
	assert.Equal(t, v1alpha1.PhaseDisabled, status.Phase)
	c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionDisabled)
	require.NotNil(t, c)
	assert.Equal(t, v1alpha1.ReasonInvalidSpec, c.Reason)
	assert.Contains(t, c.Message, `The stored NodeHealthCheck cannot be read`)
	assert.Contains(t, c.Message, `invalid duration "9999999h"`)
	assert.Equal(t, int64(2), status.ObservedGeneration)
	assert.Len(t, withReason(f.events(), health.EventDisabled), 1)
	assert.Empty(t, f.c.selectors.get().entries, "its selector is unknown: node events do not wake it")
}
