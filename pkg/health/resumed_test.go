package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// A step whose resource is gone before it timed out (its remediator or a
// user deleted it, or a restart came between) keeps the clock it started
// with: the next step starts within its timeout of the first start.

// runningRecord is the status of "sick" with step A (5m) started `age`
// ago and not timed out, its resource gone.
func runningRecord(age time.Duration, opts ...func(*v1alpha1.UnhealthyNode)) nhcOption {
	entry := &v1alpha1.UnhealthyNode{Name: "sick", Remediations: []*v1alpha1.Remediation{{
		Resource: remediationOf(templateA, "sick", age).Ref, Started: metav1.NewTime(now.Add(-age)), TemplateName: "a",
	}}}
	for _, opt := range opts {
		opt(entry)
	}
	return withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{entry}})
}

func TestAStepWhoseResourceIsGoneIsCreatedAgainOnItsFirstClock(t *testing.T) {
	d := evaluate(testNHC(threeSteps(), runningRecord(90*time.Second)), oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateA, d.Create[0].Template, "the same step again")
	assert.Empty(t, d.TimeOut)
	assert.Equal(t, now.Add(5*time.Minute-90*time.Second), d.NextDeadline, "its timeout counts from its first start")

	again := remediationOf(templateA, "sick", 0)
	again.Ref.UID = "sick-a-again"
	d.created(d.Create[0], again.Ref, now)
	records := entryOf(d, "sick").Remediations
	require.Len(t, records, 1, "one record for the step")
	assert.Equal(t, again.Ref.UID, records[0].Resource.UID)
	assert.Equal(t, now.Add(-90*time.Second), records[0].Started.Time, "the step's first start")
}

func TestAStepCreatedAgainTimesOutFromItsFirstStart(t *testing.T) {
	// Re-created 90s after the step started; the status still shows the
	// record of the resource that is gone (the merge was lost).
	again := remediationOf(templateA, "sick", 3*time.Minute+30*time.Second+time.Second)
	again.Ref.UID = "sick-a-again"
	d := evaluate(testNHC(threeSteps(), runningRecord(5*time.Minute+time.Second)), oneSick(), remediations(again))
	require.Len(t, d.TimeOut, 1, "5m after the first start, not after the second")
	assert.Equal(t, again.Ref, d.TimeOut[0].Resource)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template)
}

func TestAStepWhoseTimeRanOutWhileItsResourceWasGoneIsSkipped(t *testing.T) {
	d := evaluate(testNHC(threeSteps(), runningRecord(6*time.Minute)), oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template, "the next step, at once")
	require.Len(t, d.TimeOut, 1)
	assert.False(t, d.TimeOut[0].Annotate, "there is no resource to annotate")
	records := entryOf(d, "sick").Remediations
	require.Len(t, records, 1)
	assert.Equal(t, ptr.To(metav1.NewTime(now)), records[0].TimedOut, "the step timed out on record")
}

func TestTheLastStepWhoseTimeRanOutWhileItsResourceWasGoneExhausts(t *testing.T) {
	nhc := testNHC(escalating(escalationStep(templateA, 1, 5*time.Minute)), runningRecord(6*time.Minute))
	d := evaluate(nhc, oneSick(), nil)
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitNoTemplate, verdictOf(d, "sick").Waiting)
	assert.Contains(t, eventReasons(d.Events), EventNoTemplateLeft)
	assert.NotNil(t, entryOf(d, "sick").Remediations[0].TimedOut)
}

func TestARelapseAfterRecoveryStartsAfresh(t *testing.T) {
	// The controller deleted the resource when the node recovered; the node
	// failed again before its entry was gone.
	recovered := func(e *v1alpha1.UnhealthyNode) {
		e.ConditionsHealthyTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
	}
	d := evaluate(testNHC(threeSteps(), runningRecord(6*time.Minute, recovered)), oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateA, d.Create[0].Template)
	assert.True(t, d.Create[0].FirstResource, "a first remediation")
	assert.Empty(t, d.TimeOut)
}

func TestAResumedStepKeepsItsFirstStartOnRecord(t *testing.T) {
	// The record already names the resource created again, with the
	// step's first start; later syncs keep both, and the timeout counts
	// from the first start.
	again := remediationOf(templateA, "sick", 2*time.Minute)
	again.Ref.UID = "sick-a-again"
	merged := func(e *v1alpha1.UnhealthyNode) { e.Remediations[0].Resource = again.Ref }
	d := evaluate(testNHC(threeSteps(), runningRecord(4*time.Minute, merged)), oneSick(), remediations(again))
	assert.Empty(t, d.TimeOut)
	assert.Equal(t, now.Add(time.Minute), d.NextDeadline)
	assert.Equal(t, now.Add(-4*time.Minute), entryOf(d, "sick").Remediations[0].Started.Time)

	d = evaluate(testNHC(threeSteps(), runningRecord(5*time.Minute, merged)), oneSick(), remediations(again))
	require.Len(t, d.TimeOut, 1)
	assert.Equal(t, again.Ref, d.TimeOut[0].Resource)
}
