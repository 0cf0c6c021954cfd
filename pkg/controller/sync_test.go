package controller

import (
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

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

// noActions asserts that the remediation manager was asked to do nothing.
func noActions(t *testing.T, f *syncFixture) {
	t.Helper()
	for _, p := range f.remediations.applied {
		assert.Empty(t, p.Create, "creations")
		assert.Empty(t, p.TimeOut, "time-outs")
		assert.Empty(t, p.Delete, "deletions")
	}
}

func TestSyncForgetsAGoneNodeHealthCheck(t *testing.T) {
	f := newSyncFixture(t, nil)
	d, err := f.sync()
	require.NoError(t, err)
	assert.Zero(t, d)
	assert.Equal(t, []string{"workers"}, f.remediations.forgotten)
	assert.Empty(t, f.statuses.written)
}

// Until the informers sync, nothing is known: the status and the
// remediations are left alone, and the sync is retried soon.
func TestSyncWaitsForTheInformers(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo))
	f.remediations.obs.Ready = false
	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, notReadyRequeue, d)
	assert.Empty(t, f.statuses.written)
	assert.Empty(t, f.remediations.applied)
	assert.Empty(t, f.events())
}

// A template that cannot be watched disables the NodeHealthCheck, but the
// remediations on record stay: they cannot be read, not known to be gone.
func TestSyncDisablesOnATemplateProblemKeepingTheRecord(t *testing.T) {
	nhc := workersNHC()
	nhc.Status = remediatedStatus(longAgo)
	f := newSyncFixture(t, nhc, notReady("worker-1", longAgo))
	problem := &health.Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "Remediation template SelfNodeRemediationTemplate snr/automatic cannot be read: forbidden"}
	f.remediations.obs.Ready, f.remediations.obs.RemediationProblem = false, problem

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
			assert.Len(t, withReason(events, health.ReasonDisabled), 1)
			assert.Empty(t, withReason(events, health.ReasonRemediationCreated))
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

// A conflict means the plan was made from stale data: the error makes the
// rate limiter retry, and the requeue still holds.
func TestSyncReturnsAStatusConflictWithTheRequeue(t *testing.T) {
	cases := []struct {
		name    string
		problem *health.Problem
		want    time.Duration
	}{
		{"the next deadline", nil, 200 * time.Second},
		{"the problem requeue", &health.Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "forbidden"}, problemRequeue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", t0.Add(-100*time.Second)))
			if tc.problem != nil {
				f.remediations.obs.Ready, f.remediations.obs.RemediationProblem = false, tc.problem
			}
			f.statuses.err = apierrors.NewConflict(schema.GroupResource{Group: "remediation.medik8s.io", Resource: "nodehealthchecks"}, "workers", errors.New("the object has been modified"))
			d, err := f.sync()
			assert.True(t, apierrors.IsConflict(err), "got %v", err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// The status records only what was created.
func TestSyncRecordsOnlyWhatWasCreated(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		outcome func(*health.Plan) health.Outcome
		wantErr error
		created bool
	}{
		{"a failed create", func(*health.Plan) health.Outcome { return health.Outcome{Errors: []error{boom}} }, boom, false},
		{"a successful create", nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.remediations.outcome = tc.outcome
			_, err := f.sync()
			assert.ErrorIs(t, err, tc.wantErr)
			require.Len(t, f.remediations.applied, 1)
			assert.Len(t, f.remediations.applied[0].Create, 1, "the plan creates a remediation")
			status := f.lastStatus(t)
			entry := entryOf(status, "worker-1")
			require.NotNil(t, entry, "an unhealthy node is listed either way")
			created := withReason(f.events(), health.ReasonRemediationCreated)
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
		name     string
		outcome  func(*health.Plan) health.Outcome
		timedOut bool
	}{
		{"a failed annotation", func(*health.Plan) health.Outcome { return health.Outcome{Errors: []error{annotationFailed}} }, false},
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
			f.remediations.obs.Remediations["worker-1"] = []health.Remediation{{Ref: snrOfWorker, TemplateName: snrTemplate.Name, Created: started}}
			f.remediations.outcome = tc.outcome

			_, err := f.sync()
			require.Len(t, f.remediations.applied, 1)
			require.Len(t, f.remediations.applied[0].TimeOut, 1, "the plan times the SNR out")
			entry := entryOf(f.lastStatus(t), "worker-1")
			require.NotNil(t, entry)
			timedOut := withReason(f.events(), health.ReasonRemediationTimedOut)
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

// A sync that runs before the informer shows the last status write decides
// from that write, and from the informer's object once it is as new.
func TestSyncReadsItsOwnWrites(t *testing.T) {
	stale := workersNHC()
	f := newSyncFixture(t, stale, notReady("worker-1", longAgo))
	_, err := f.sync()
	require.NoError(t, err)
	assert.Len(t, withReason(f.events(), health.ReasonDetectedUnhealthy), 1)
	written := f.statuses.written[0]

	// The remediation informer shows the created SNR; the lister still has
	// the object without a status.
	rem := entryOf(written.Status, "worker-1").Remediations[0]
	f.remediations.obs.Remediations["worker-1"] = []health.Remediation{{Ref: rem.Resource, TemplateName: rem.TemplateName, Created: rem.Started.Time}}
	f.clock.Step(time.Minute)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Empty(t, f.events(), "the node was detected and the NodeHealthCheck enabled before")
	assert.Empty(t, f.remediations.applied[1].Create, "the remediation on record is not created again")
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
	skipped := func() []string { return withReason(f.events(), health.ReasonRemediationSkipped) }

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

// Sync returns how soon the plan changes with no object changing: when the
// first soon-unhealthy node becomes unhealthy.
func TestSyncRequeuesAtTheNextDeadline(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  time.Duration
	}{
		{"all healthy", []*corev1.Node{healthyNode("worker-1")}, 0},
		{"soon unhealthy", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second))}, 200 * time.Second},
		{"the first deadline", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second)), notReady("worker-2", t0.Add(-250*time.Second))}, 50 * time.Second},
		{"already unhealthy", []*corev1.Node{notReady("worker-1", longAgo)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), tc.nodes...)
			d, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// A template read with GET (its kind may not be watched) changes with no
// event: Sync requeues no later than the template is read again.
func TestSyncRequeuesNoLaterThanATemplateIsReadAgain(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  time.Duration
	}{
		{"all healthy", []*corev1.Node{healthyNode("worker-1")}, 30 * time.Second},
		{"a later deadline", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second))}, 30 * time.Second},
		{"a sooner deadline", []*corev1.Node{notReady("worker-1", t0.Add(-290*time.Second))}, 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), tc.nodes...)
			f.remediations.obs.RefreshAfter = 30 * time.Second
			d, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}

func TestSyncWritesNothingWithoutTheLease(t *testing.T) {
	// A replica whose lease renewal failed may already have been replaced: it
	// must neither remediate nor write the status, and it retries.
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	lost := errors.New("the last lease renewal failed")
	f.c.GuardWrites(func() (time.Time, error) { return time.Time{}, lost })
	_, err := f.sync()
	assert.ErrorIs(t, err, lost)
	assert.Empty(t, f.remediations.applied, "no action")
	assert.Empty(t, f.statuses.written, "no status")
	assert.Empty(t, f.events(), "no event")

	f.c.GuardWrites(func() (time.Time, error) { return time.Now().Add(time.Minute), nil })
	_, err = f.sync()
	require.NoError(t, err)
	require.Len(t, f.remediations.applied, 1)
	assert.Len(t, f.remediations.applied[0].Create, 1, "renewed: it acts again")
}

// A leader's writes end when it can no longer show that it holds the
// lease: the context of every write ends then, and a create is not sent
// once the lease cannot be shown, even within the sync that planned it.
func TestWritesEndWithTheLease(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
	until := time.Now().Add(7 * time.Second)
	calls := 0
	lost := errors.New("the last lease renewal failed")
	f.c.GuardWrites(func() (time.Time, error) {
		calls++
		if calls > 1 {
			return time.Time{}, lost
		}
		return until, nil
	})
	_, err := f.sync()
	assert.ErrorIs(t, err, lost)
	require.Len(t, f.remediations.deadlines, 1)
	assert.Equal(t, until, f.remediations.deadlines[0], "the writes end with the lease")
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
			require.NoError(t, f.nodes.Delete(nodecache.NodeOf(healthyNode("worker-1"))))
			f.c.members.update("worker-1", nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.remediations.beforeCreate = func(health.Creation) { tc.change(t, f) }
			requeue, err := f.sync()
			require.NoError(t, err)
			require.Len(t, f.remediations.applied, 1)
			assert.Len(t, f.remediations.applied[0].Create, 1, "the plan wanted it")
			assert.Empty(t, withReason(f.events(), health.ReasonRemediationCreated), "nothing was created")
			assert.Empty(t, entryOf(f.lastStatus(t), "worker-1").Remediations)
			assert.Equal(t, time.Millisecond, requeue, "the next sync decides again at once")
		})
	}
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
	assert.Empty(t, f.remediations.applied, "nothing is done for its nodes")
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
	assert.Len(t, withReason(f.events(), health.ReasonDisabled), 1)
	assert.Empty(t, f.c.selectors.get(f.c.nhcLister).entries, "its selector is unknown: node events do not wake it")
}

// While a NodeHealthCheck has a node that is not healthy, the node cache
// reads updates as they arrive: a remediation is never created from a
// picture older than the watch's delay. Healthy again, or gone, it no
// longer asks for that.
func TestSyncAsksForNodeUpdatesAtOnceWhileANodeIsNotHealthy(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), healthyNode("worker-1"), notReady("worker-2", t0.Add(-100*time.Second)))
	_, err := f.sync()
	require.NoError(t, err)
	assert.True(t, f.c.attention.any(), "a node waits for its deadline")

	f.setNode(t, healthyNode("worker-2"))
	_, err = f.sync()
	require.NoError(t, err)
	assert.False(t, f.c.attention.any(), "every node is healthy")

	f.setNode(t, notReady("worker-2", longAgo))
	_, err = f.sync()
	require.NoError(t, err)
	assert.True(t, f.c.attention.any(), "a node is unhealthy")

	require.NoError(t, f.nhcs.Delete(workersNHC()))
	_, err = f.sync()
	require.NoError(t, err)
	assert.False(t, f.c.attention.any(), "the NodeHealthCheck is gone")
}
