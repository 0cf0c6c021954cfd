package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

var (
	templateA = template("ATemplate", "a")
	templateB = template("BTemplate", "b")
	// multiOne and multiTwo share a kind, as several FAR or SNR templates do.
	multiOne = template("MultiTemplate", "one")
	multiTwo = template("MultiTemplate", "two")
)

// threeSteps is an escalation given out of order: A (order 1, 5m), then the
// two Multi templates (orders 5 and 8, 10m each).
func threeSteps() nhcOption {
	return escalating(
		escalationStep(multiTwo, 8, 10*time.Minute),
		escalationStep(templateA, 1, 5*time.Minute),
		escalationStep(multiOne, 5, 10*time.Minute),
	)
}

// oneSick is two healthy nodes and an unhealthy "sick" one.
func oneSick() []*nodeview.Node {
	return append(nodes("healthy", 2), testNode("sick", unhealthy))
}

func TestEscalationStartsWithTheLowestOrder(t *testing.T) {
	nhc := testNHC(threeSteps())
	d := evaluate(nhc, oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, Creation{Node: "sick", Template: templateA, Step: 0, Timeout: 5 * time.Minute, FirstResource: true}, d.Create[0])
	assert.Equal(t, 8, nhc.Spec.EscalatingRemediations[0].Order, "the spec is not sorted in place")
}

func TestEscalationTimeout(t *testing.T) {
	cases := []struct {
		name         string
		age          time.Duration
		opts         []remediationOption
		wantTimeOut  bool
		wantAnnotate bool
		wantFailed   bool
		// wantDeadline is the escalation deadline; without one, the next
		// deadline is the resource's 48h flag.
		wantDeadline time.Time
	}{
		{"just before the timeout", 5*time.Minute - time.Nanosecond, nil, false, false, false, now.Add(time.Nanosecond)},
		{"exactly at the timeout", 5 * time.Minute, nil, true, true, false, time.Time{}},
		{"just after the timeout", 5*time.Minute + time.Nanosecond, nil, true, true, false, time.Time{}},
		{"Succeeded=False before the timeout", time.Minute, []remediationOption{succeeded(metav1.ConditionFalse)}, true, true, true, time.Time{}},
		{"Succeeded=Unknown before the timeout", time.Minute, []remediationOption{succeeded(metav1.ConditionUnknown)}, false, false, false, now.Add(4 * time.Minute)},
		{"Succeeded=True at the timeout: no annotation", 5 * time.Minute, []remediationOption{succeeded(metav1.ConditionTrue)}, true, false, false, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resources := remediations(remediationOf(templateA, "sick", tc.age, tc.opts...))
			d := evaluate(testNHC(threeSteps()), oneSick(), resources)
			wantDeadline := tc.wantDeadline
			if wantDeadline.IsZero() {
				wantDeadline = now.Add(OldRemediationAge - tc.age)
			}
			assert.Equal(t, wantDeadline, d.NextDeadline)
			if !tc.wantTimeOut {
				assert.Empty(t, d.TimeOut)
				assert.Empty(t, d.Create)
				assert.Nil(t, entryOf(d, "sick").Remediations[0].TimedOut)
				return
			}
			require.Len(t, d.TimeOut, 1)
			assert.Equal(t, TimeOut{Node: "sick", Resource: resources["sick"][0].Ref, Annotate: tc.wantAnnotate, Failed: tc.wantFailed, At: now}, d.TimeOut[0])
			require.Len(t, d.Create, 1)
			assert.Equal(t, multiOne, d.Create[0].Template)
			assert.Equal(t, 1, d.Create[0].Step)
			assert.True(t, d.Create[0].Escalation)
			entry := entryOf(d, "sick")
			require.Len(t, entry.Remediations, 1)
			assert.Equal(t, metav1.NewTime(now), *entry.Remediations[0].TimedOut, "the status records the time-out")
		})
	}
}

func TestEscalationOfTwoTemplatesOfOneKind(t *testing.T) {
	// Upstream loses the second resource of a kind in the status (reference
	// §2.15 #1); each one is tracked here by its template name.
	nhc := testNHC(threeSteps())
	first := remediationOf(templateA, "sick", 20*time.Minute, timedOutAnnotation(now.Add(-15*time.Minute)))
	second := remediationOf(multiOne, "sick", 15*time.Minute, generatedName("sick-x7k2p"))

	d := evaluate(nhc, oneSick(), remediationsFor("sick", first, second))
	require.Len(t, d.TimeOut, 1, "the first Multi step timed out after its own 10m")
	assert.Equal(t, "sick-x7k2p", d.TimeOut[0].Resource.Name)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiTwo, d.Create[0].Template)
	assert.Equal(t, 2, d.Create[0].Step)

	entry := entryOf(d, "sick")
	require.Len(t, entry.Remediations, 2)
	assert.Equal(t, "a", entry.Remediations[0].TemplateName)
	assert.Equal(t, metav1.NewTime(now.Add(-15*time.Minute)), *entry.Remediations[0].TimedOut, "read from the annotation")
	assert.Equal(t, "one", entry.Remediations[1].TemplateName)
	assert.Equal(t, metav1.NewTime(now), *entry.Remediations[1].TimedOut)

	// After the controller created the third one, the status lists all three.
	third := corev1.ObjectReference{APIVersion: multiTwo.APIVersion, Kind: "Multi", Namespace: "ns", Name: "sick-p2q8z", UID: "third"}
	d.created(d.Create[0], third, now)
	entry = entryOf(d, "sick")
	require.Len(t, entry.Remediations, 3)
	assert.Equal(t, "two", entry.Remediations[2].TemplateName)
	assert.Equal(t, third, entry.Remediations[2].Resource)
	assert.Nil(t, entry.Remediations[2].TimedOut)
}

func TestEscalationExhaustedIsReportedOnce(t *testing.T) {
	nhc := testNHC(escalating(escalationStep(templateA, 1, 5*time.Minute), escalationStep(templateB, 2, 5*time.Minute)))
	first := remediationOf(templateA, "sick", 12*time.Minute, timedOutAnnotation(now.Add(-7*time.Minute)))
	last := remediationOf(templateB, "sick", 7*time.Minute)

	d := evaluate(nhc, oneSick(), remediationsFor("sick", first, last))
	require.Len(t, d.TimeOut, 1)
	assert.Equal(t, last.Ref, d.TimeOut[0].Resource)
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitNoTemplate, verdictOf(d, "sick").Waiting)
	assert.Contains(t, eventReasons(d.Events), "NoTemplateLeft")

	// The next evaluation sees the time-out and stays quiet.
	nhc.Status = d.Status
	last.TimedOut = now
	d = evaluate(nhc, oneSick(), remediationsFor("sick", first, last))
	assert.Empty(t, d.TimeOut)
	assert.Empty(t, d.Create)
	assert.NotContains(t, eventReasons(d.Events), "NoTemplateLeft")
	assert.Equal(t, WaitNoTemplate, verdictOf(d, "sick").Waiting)
	assert.Equal(t, v1alpha1.PhaseRemediating, d.Status.Phase, "its resources stay until the node is healthy")
}

func TestEscalationWithSucceededTrueRemembersItsTimeOutInTheStatus(t *testing.T) {
	nhc := testNHC(threeSteps())
	first := remediationOf(templateA, "sick", 6*time.Minute, succeeded(metav1.ConditionTrue))
	d := evaluate(nhc, oneSick(), remediations(first))
	require.Len(t, d.TimeOut, 1)
	assert.False(t, d.TimeOut[0].Annotate)

	// Its resource never carries the annotation; the status remembers.
	nhc.Status = d.Status
	second := remediationOf(multiOne, "sick", 0, generatedName("sick-abcde"))
	d = evaluate(nhc, oneSick(), remediationsFor("sick", first, second))
	assert.Empty(t, d.TimeOut)
	assert.Empty(t, d.Create)
	assert.Equal(t, now.Add(10*time.Minute), d.NextDeadline)
}

func TestEscalationContinuesAfterACrashBetweenTimeOutAndCreate(t *testing.T) {
	// The first step was annotated, then the controller died before creating
	// the next one: a fresh evaluation creates it, and only it.
	first := remediationOf(templateA, "sick", 6*time.Minute, timedOutAnnotation(now.Add(-time.Minute)))
	d := evaluate(testNHC(threeSteps()), oneSick(), remediations(first))
	assert.Empty(t, d.TimeOut)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template)
	assert.True(t, d.Create[0].Escalation)
	assert.False(t, d.Create[0].FirstResource)
}

func TestEscalationRemembersStepsWhoseResourceIsGone(t *testing.T) {
	// A remediator deleted its timed-out resource although it must not: the
	// status keeps the step, so it is not started again.
	nhc := testNHC(threeSteps(), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{
		Name: "sick",
		Remediations: []*v1alpha1.Remediation{{
			Resource:     remediationOf(templateA, "sick", time.Hour).Ref,
			Started:      metav1.NewTime(now.Add(-time.Hour)),
			TimedOut:     ptr.To(metav1.NewTime(now.Add(-55 * time.Minute))),
			TemplateName: "a",
		}},
	}}}))
	d := evaluate(nhc, oneSick(), nil)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template)
	require.Len(t, entryOf(d, "sick").Remediations, 1, "the gone step stays on record")
}

func TestClassicRemediationNeverTimesOut(t *testing.T) {
	resources := remediations(snrRemediation("sick", 47*time.Hour, succeeded(metav1.ConditionFalse)))
	d := evaluate(testNHC(), oneSick(), resources)
	assert.Empty(t, d.TimeOut)
	assert.Empty(t, d.Create)
	assert.Empty(t, d.Delete)
	assert.Equal(t, now.Add(time.Hour), d.NextDeadline, "only the 48h flag is ahead")
}

func TestResourceOfATemplateTheSpecNoLongerHasKeepsRunning(t *testing.T) {
	resources := remediations(remediationOf(template("GoneTemplate", "gone"), "sick", time.Hour))
	d := evaluate(testNHC(threeSteps()), oneSick(), resources)
	assert.Empty(t, d.Create, "no second remediation beside a running one")
	assert.Empty(t, d.TimeOut)
}

func TestLegacyResourceWithoutTemplateNameMatchesItsKind(t *testing.T) {
	legacy := remediationOf(templateA, "sick", 6*time.Minute)
	legacy.TemplateName = ""
	d := evaluate(testNHC(threeSteps()), oneSick(), remediations(legacy))
	require.Len(t, d.TimeOut, 1)
	require.Len(t, d.Create, 1)
	assert.Equal(t, multiOne, d.Create[0].Template)
}

func TestNoNewStepWhileAResourceIsBeingDeleted(t *testing.T) {
	// The node relapsed while its old resource waits for its finalizer: a new
	// resource of the same name could not be created yet.
	resources := remediations(snrRemediation("sick", time.Minute, deleting))
	d := evaluate(testNHC(), oneSick(), resources)
	assert.Empty(t, d.Create)
	assert.Empty(t, d.Delete)
	assert.Equal(t, WaitDeletion, verdictOf(d, "sick").Waiting)
	assert.Equal(t, 2, d.Healthy)
	assert.Equal(t, 1, d.Remediating)
}

func TestAntiLoopRule(t *testing.T) {
	// Ready went Unknown → False during the reboot: the new condition's
	// duration has not passed, so the node keeps its remediation, does not
	// escalate although the step's timeout passed, and is not healthy.
	list := append(nodes("healthy", 2), testNode("sick", notReady(time.Minute)))
	resources := remediations(remediationOf(templateA, "sick", 10*time.Minute))
	d := evaluate(testNHC(threeSteps()), list, resources)
	assert.Equal(t, StateSoonUnhealthy, verdictOf(d, "sick").State)
	assert.Empty(t, d.Delete)
	assert.Empty(t, d.TimeOut)
	assert.Empty(t, d.Create)
	assert.Equal(t, 2, d.Healthy)
	assert.Equal(t, now.Add(4*time.Minute), d.NextDeadline, "the decision changes when the new condition expires")
	assert.Len(t, entryOf(d, "sick").Remediations, 1)
	assert.Equal(t, v1alpha1.PhaseRemediating, d.Status.Phase)

	// When it expires, the overdue step is timed out at once.
	list[2] = testNode("sick", notReady(conditionDuration))
	d = evaluate(testNHC(threeSteps()), list, resources)
	assert.Len(t, d.TimeOut, 1)
	assert.Len(t, d.Create, 1)
}

func TestAnEarlierStepBeingDeletedDoesNotFreezeTheRunningOne(t *testing.T) {
	// A remediator deletes its timed-out resource, and its finalizer holds it.
	earlier := remediationOf(templateA, "sick", 30*time.Minute, timedOutAnnotation(now.Add(-20*time.Minute)), deleting)
	cases := []struct {
		name    string
		running Remediation
	}{
		{"its timeout passed", remediationOf(multiOne, "sick", 20*time.Minute, generatedName("sick-one"))},
		{"its remediator failed", remediationOf(multiOne, "sick", time.Minute, generatedName("sick-one"), succeeded(metav1.ConditionFalse))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluate(testNHC(threeSteps()), oneSick(), remediationsFor("sick", earlier, tc.running))
			require.Len(t, d.TimeOut, 1, "the running step is handled")
			assert.Equal(t, tc.running.Ref, d.TimeOut[0].Resource)
			require.Len(t, d.Create, 1)
			assert.Equal(t, multiTwo, d.Create[0].Template)
		})
	}

	// Before its timeout, the running step has a deadline.
	running := remediationOf(multiOne, "sick", time.Minute, generatedName("sick-one"))
	d := evaluate(testNHC(threeSteps()), oneSick(), remediationsFor("sick", earlier, running))
	assert.Empty(t, d.TimeOut)
	assert.Equal(t, now.Add(9*time.Minute), d.NextDeadline)
}

func TestClusterScopedTemplatesReferencedWithANamespaceEscalate(t *testing.T) {
	// The spec makes the reference's namespace mandatory; a cluster-scoped
	// template's resources have none.
	fence := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterFenceTemplate", Namespace: "ns", Name: "fence"}
	nhc := testNHC(escalating(escalationStep(fence, 1, 5*time.Minute), escalationStep(templateB, 2, 5*time.Minute)))
	r := remediationOf(fence, "sick", 10*time.Minute)
	r.Ref.Namespace = ""
	d := evaluate(nhc, oneSick(), remediationsFor("sick", r))
	require.Len(t, d.TimeOut, 1, "the step is found, so its timeout counts")
	require.Len(t, d.Create, 1)
	assert.Equal(t, templateB, d.Create[0].Template)
}
