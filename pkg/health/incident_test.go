package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// An incident lasts while a node stays unhealthy, whichever unhealthy
// condition it shows: a step whose resource its remediator deleted, held
// by a finalizer, ends on its clock even after the condition changed (its
// transition time is then later than the step). One the controller deleted
// when the node recovered belongs to the incident before: a relapse waits
// for its deletion, however many syncs that takes, then starts at the
// first step.
func TestAnIncidentLastsWhileTheNodeStaysUnhealthy(t *testing.T) {
	t.Run("the remediator deleted the step, and the condition changed", stepDeletedByItsRemediator)
	t.Run("the controller deleted the step when the node recovered", stepDeletedAtRecovery)
	t.Run("the node relapsed, seen before its condition's duration passed", relapseBeforeItsDuration)
	t.Run("the node relapsed after its first step failed", relapseAfterAFailedStep)
}

// sickWithStepA is a node unhealthy for an hour, its first step created.
func sickWithStepA(t *testing.T) *simulation {
	s := newSimulation(testNHC(threeSteps()), 3)
	s.finalizers = true
	s.setReady("node-00", corev1.ConditionUnknown, time.Hour)
	d := s.evaluate()
	require.Len(t, d.Create, 1)
	require.Equal(t, templateA, d.Create[0].Template)
	return s
}

func stepDeletedByItsRemediator(t *testing.T) {
	s := sickWithStepA(t)
	s.advance(time.Minute)
	s.remove("node-00", s.resources["node-00"][0].Ref.UID)
	s.evaluate()
	s.advance(time.Minute)
	// Unknown became False 30 s ago: the condition now starts after
	// the step did, and holds its 5 minutes from 00:06:30.
	s.setReady("node-00", corev1.ConditionFalse, 30*time.Second)
	for range 5 {
		d := s.evaluate()
		assert.Empty(t, d.Create, "until the node is unhealthy again, past step A's timeout")
		s.advance(time.Minute)
	}
	d := s.evaluate()
	require.Len(t, d.TimeOut, 1, "step A timed out on its clock")
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template, "the next step")
}

func stepDeletedAtRecovery(t *testing.T) {
	s := sickWithStepA(t)
	s.advance(time.Minute)
	s.recover("node-00")
	d := s.evaluate()
	require.Len(t, d.Delete, 1)
	s.advance(time.Minute)
	s.setReady("node-00", corev1.ConditionFalse, 0)
	s.advance(10 * time.Minute)
	for range 4 {
		d := s.evaluate()
		assert.Empty(t, d.Create, "the relapse waits for the deletion")
		assert.Empty(t, d.TimeOut)
		assert.Equal(t, WaitDeletion, verdictOf(d, "node-00").Waiting)
		s.advance(time.Minute)
	}
	s.finishDeletions("node-00")
	d = s.evaluate()
	assert.Empty(t, d.TimeOut, "nothing of the incident before times out")
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateA, d.Create[0].Template, "the first step again")
}

func relapseBeforeItsDuration(t *testing.T) {
	s := sickWithStepA(t)
	s.recover("node-00")
	require.Len(t, s.evaluate().Delete, 1)
	s.advance(10 * time.Second)
	s.setReady("node-00", corev1.ConditionFalse, 0)
	for range 12 {
		d := s.evaluate()
		assert.Empty(t, d.Create, "the relapse waits for its duration, then for the deletion")
		assert.Empty(t, d.TimeOut, "step A is of the incident before")
		s.advance(time.Minute)
	}
	s.finishDeletions("node-00")
	d := s.evaluate()
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateA, d.Create[0].Template, "the first step again")
}

func relapseAfterAFailedStep(t *testing.T) {
	s := sickWithStepA(t)
	s.setOnResource(s.resources["node-00"][0].Ref.UID, func(r *Remediation) { r.Succeeded = metav1.ConditionFalse })
	d := s.evaluate()
	require.Len(t, d.Create, 1)
	require.Equal(t, multiOne, d.Create[0].Template, "the failed step is followed at once")
	s.recover("node-00")
	require.NotEmpty(t, s.evaluate().Delete)
	s.advance(5 * time.Second)
	s.setReady("node-00", corev1.ConditionUnknown, 0)
	s.evaluate()
	s.finishDeletions("node-00")
	for range 5 {
		d = s.evaluate()
		assert.Empty(t, d.Create, "the relapse waits for its condition's duration")
		s.advance(time.Minute)
	}
	d = s.evaluate()
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateA, d.Create[0].Template, "the first step again, not the one after the failed step")
}

// A step whose resource its remediator deleted outright is created again on
// its first clock, also while an earlier step, timed out, is still held by
// its remediator's finalizer: that one is of another kind, and ended.
func TestAStepGoneIsCreatedAgainBesideATimedOutStepBeingDeleted(t *testing.T) {
	s := newSimulation(testNHC(threeSteps()), 3)
	s.finalizers = true
	s.fail("node-00")
	require.Len(t, s.evaluate().Create, 1)
	s.remove("node-00", s.resources["node-00"][0].Ref.UID)
	s.advance(5 * time.Minute)
	d := s.evaluate()
	require.Len(t, d.TimeOut, 1, "step A, held, timed out on its clock")
	require.Len(t, d.Create, 1)
	require.Equal(t, multiOne, d.Create[0].Template)

	s.advance(time.Minute)
	s.finalizers = false
	s.remove("node-00", s.resources["node-00"][1].Ref.UID)
	d = s.evaluate()
	require.Len(t, d.Create, 1, "the step gone is created again")
	assert.Equal(t, multiOne, d.Create[0].Template)
	assert.Equal(t, WaitNone, verdictOf(d, "node-00").Waiting)

	s.advance(9 * time.Minute)
	d = s.evaluate()
	require.Len(t, d.TimeOut, 1, "10 minutes after its first start")
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiTwo, d.Create[0].Template)
}

// A NodeHealthCheck holds a node by its status while a step is under way
// and it can go on with it, so that no other one that selects the node
// takes it over while the step's resource is gone.
func TestANodeIsHeldOnRecordWhileAStepIsUnderWay(t *testing.T) {
	started := metav1.NewTime(time.Unix(0, 0))
	step := func(timedOut bool) *v1alpha1.Remediation {
		rem := &v1alpha1.Remediation{Started: started}
		if timedOut {
			rem.TimedOut = &started
		}
		return rem
	}
	cases := []struct {
		name  string
		entry v1alpha1.UnhealthyNode
		pause bool
		held  bool
	}{
		{"a step under way", v1alpha1.UnhealthyNode{Remediations: []*v1alpha1.Remediation{step(true), step(false)}}, false, true},
		{"every step timed out", v1alpha1.UnhealthyNode{Remediations: []*v1alpha1.Remediation{step(true)}}, false, false},
		{"the node recovered", v1alpha1.UnhealthyNode{Remediations: []*v1alpha1.Remediation{step(false)}, ConditionsHealthyTimestamp: &started}, false, false},
		{"no step yet", v1alpha1.UnhealthyNode{}, false, false},
		{"paused: it cannot go on", v1alpha1.UnhealthyNode{Remediations: []*v1alpha1.Remediation{step(false)}}, true, false},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			nhc := testNHC(threeSteps())
			if tt.pause {
				nhc.Spec.PauseRequests = []string{"maintenance"}
			}
			tt.entry.Name = "node-00"
			nhc.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "node-01"}, &tt.entry}
			assert.Equal(t, tt.held, HoldsOnRecord(nhc, &tt.entry))
			want := []string(nil)
			if tt.held {
				want = []string{"node-00"}
			}
			assert.Equal(t, want, NodesHeldOnRecord(nhc))
		})
	}
}

// A node selected again while a resource of its ended incident is still
// there and not being deleted (its deletion at the end failed, and was not
// sent again before the node was selected again) waits: the resource is of
// no later incident, so its clock is not the new incident's, and the
// controller deletes nothing while the node is unhealthy.
func TestANodeSelectedAgainWaitsForWhatItsEndedIncidentLeft(t *testing.T) {
	old := remediationOf(templateA, "sick", 6*time.Minute)
	mark := metav1.NewTime(now.Add(-time.Minute))
	entry := &v1alpha1.UnhealthyNode{Name: "sick", ConditionsHealthyTimestamp: &mark, Remediations: []*v1alpha1.Remediation{
		{Resource: old.Ref, Started: metav1.NewTime(old.Created), TemplateName: templateA.Name},
	}}
	nhc := testNHC(threeSteps(), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{entry}}))
	d := decide(Input{NHC: nhc, Nodes: []*nodeview.Node{testNode("sick", notReady(time.Hour))}, Remediations: map[string][]Remediation{"sick": {old}}, Now: now})
	assert.Empty(t, d.TimeOut, "the old step's clock is not this incident's")
	assert.Empty(t, d.Create)
	assert.Empty(t, d.Delete, "nothing is deleted while the node is unhealthy")
	assert.Equal(t, WaitDeletion, verdictOf(d, "sick").Waiting)
	assert.Equal(t, &mark, entryOf(d, "sick").ConditionsHealthyTimestamp, "the record keeps the end of the last incident")
}
