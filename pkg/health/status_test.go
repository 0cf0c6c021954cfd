package health

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestPhasePriority(t *testing.T) {
	problem := &Problem{Reason: v1alpha1.ReasonTemplateInvalid, Message: "no spec.template.spec"}
	remediating := remediations(snrRemediation("sick", time.Minute))
	cases := []struct {
		name       string
		nhc        *v1alpha1.NodeHealthCheck
		problem    *Problem
		resources  map[string][]Remediation
		wantPhase  v1alpha1.NodeHealthCheckPhase
		wantReason string
	}{
		{"disabled beats paused and remediating", testNHC(paused), problem, remediating, v1alpha1.PhaseDisabled, "NHC is disabled: RemediationTemplateInvalid: no spec.template.spec"},
		{"paused beats remediating", testNHC(paused), nil, remediating, v1alpha1.PhasePaused, "NHC is paused: upgrade by @admin"},
		{"remediating", testNHC(), nil, remediating, v1alpha1.PhaseRemediating, "NHC is remediating 1 nodes"},
		{"enabled", testNHC(), nil, nil, v1alpha1.PhaseEnabled, "NHC is enabled, no ongoing remediation"},
		{"enabled with a node waiting", testNHC(minHealthy(intstr.FromInt32(3))), nil, nil, v1alpha1.PhaseEnabled,
			"NHC is enabled, no ongoing remediation; 1 unhealthy nodes wait: 1 because only 2 of 3 nodes are healthy and 3 must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(Input{NHC: tc.nhc, Nodes: oneSick(), Remediations: tc.resources, RemediationProblem: tc.problem, Now: now})
			assert.Equal(t, tc.wantPhase, d.Status.Phase)
			assert.Equal(t, tc.wantReason, d.Status.Reason)
		})
	}
}

func TestStatusCounters(t *testing.T) {
	list := append(nodes("healthy", 4), testNode("sick", unhealthy), testNode("soon", notReady(time.Minute)), testNode("back"))
	resources := remediations(snrRemediation("back", time.Hour), snrRemediation("gone", time.Hour, permanentNodeDeletion))
	nhc := testNHC(minHealthy(intstr.FromInt32(1)))
	d := evaluate(nhc, list, resources)
	s := d.Status
	assert.Equal(t, int32(7), *s.ObservedNodes)
	assert.Equal(t, int32(4), *s.HealthyNodes)
	assert.Equal(t, int32(1), *s.RemediatingNodes, "back; gone is not selected")
	assert.Equal(t, nhc.Generation, s.ObservedGeneration)
	names := []string{}
	for _, e := range s.UnhealthyNodes {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"back", "gone", "sick"}, names, "sorted; soon is not unhealthy yet")
	assert.Equal(t, map[string]metav1.Time{"back": metav1.NewTime(now.Add(-time.Hour)), "gone": metav1.NewTime(now.Add(-time.Hour))}, s.InFlightRemediations)

	require.Len(t, d.Create, 1)
	ref := corev1.ObjectReference{APIVersion: snrTemplate.APIVersion, Kind: "SelfNodeRemediation", Namespace: "snr", Name: "sick", UID: "new"}
	d.created(d.Create[0], ref, now)
	assert.Equal(t, int32(2), *d.Status.RemediatingNodes)
	assert.Equal(t, 1, d.Remediating, "the plan counts what it saw; the status counts what was created")
	assert.Equal(t, metav1.NewTime(now), d.Status.InFlightRemediations["sick"])
	assert.Equal(t, []*v1alpha1.Remediation{{Resource: ref, Started: metav1.NewTime(now), TemplateName: "automatic"}}, entryOf(d, "sick").Remediations)
	assert.Equal(t, "NHC is remediating 3 nodes", d.Status.Reason)
}

func TestSoonUnhealthyNodeStaysListedDuringItsIncident(t *testing.T) {
	// A listed node whose condition changed (Unknown → False) stays listed, so
	// that it does not produce a second DetectedUnhealthy event.
	nhc := testNHC(minHealthy(intstr.FromInt32(3)), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "sick"}}}))
	list := append(nodes("healthy", 2), testNode("sick", notReady(time.Minute)))
	d := evaluate(nhc, list, nil)
	assert.NotNil(t, entryOf(d, "sick"))
}

func TestEventsOnTransitionsOnly(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(3))), 4)
	d := s.evaluate()
	assert.Equal(t, []string{"Enabled"}, eventReasons(d.Events), "the first evaluation enables")
	d = s.evaluate()
	assert.Empty(t, d.Events)

	s.fail("node-00")
	d = s.evaluate()
	require.Equal(t, []string{"DetectedUnhealthy"}, eventReasons(d.Events))
	assert.Equal(t, `Node matches unhealthy condition. Node "node-00", condition type "Ready", condition status "False"`, d.Events[0].Message)
	assert.Equal(t, "node-00", d.Events[0].Node)
	d = s.evaluate()
	assert.Empty(t, d.Events, "one event per incident")

	problem := &Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "gone"}
	d = decide(Input{NHC: s.nhc, Nodes: s.nodes, Remediations: s.resources, RemediationProblem: problem, Now: now})
	require.Equal(t, []string{"Disabled"}, eventReasons(d.Events))
	assert.Equal(t, corev1.EventTypeWarning, d.Events[0].Type)
	assert.Equal(t, "Disabling NHC. Reason: RemediationTemplateNotFound, Message: gone", d.Events[0].Message)
	s.nhc.Status = d.Status
	d = decide(Input{NHC: s.nhc, Nodes: s.nodes, Remediations: s.resources, RemediationProblem: problem, Now: now})
	assert.Empty(t, d.Events)
	c := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDisabled)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, v1alpha1.ReasonTemplateNotFound, c.Reason)

	d = s.evaluate()
	assert.Equal(t, []string{"Enabled"}, eventReasons(d.Events))
	c = meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDisabled)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1alpha1.ReasonEnabled, c.Reason)
}

func TestEvaluateDoesNotModifyItsInput(t *testing.T) {
	s := specStorm()
	s.fail(s.nodeNames(0, 9)...)
	s.evaluate()
	s.recover(s.nodeNames(0, 3)...)
	nhc := s.nhc.DeepCopy()
	nodesBefore := make([]*nodeview.Node, len(s.nodes))
	for i, n := range s.nodes {
		nodesBefore[i] = n.DeepCopy()
	}
	d := decide(Input{NHC: s.nhc, Nodes: s.nodes, Remediations: s.resources, Now: s.clock})
	d.created(Creation{Node: "node-00"}, corev1.ObjectReference{Name: "x"}, now)
	assert.Equal(t, nhc, s.nhc)
	assert.Equal(t, nodesBefore, s.nodes)
}

func TestDisabledKeepsTheLastStatus(t *testing.T) {
	s := newSimulation(testNHC(), 3)
	s.fail("node-00")
	s.evaluate()
	before := s.nhc.Status
	d := decide(Input{NHC: s.nhc, RemediationProblem: &Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "forbidden"}, ResourcesUnknown: true, Now: now})
	status, events := d.Status, d.Events
	assert.Equal(t, v1alpha1.PhaseDisabled, status.Phase)
	assert.Equal(t, "NHC is disabled: RemediationTemplateNotFound: forbidden", status.Reason)
	assert.Equal(t, before.UnhealthyNodes, status.UnhealthyNodes, "remediations stay on record")
	assert.Equal(t, before.HealthyNodes, status.HealthyNodes)
	require.Equal(t, []string{"Disabled"}, eventReasons(events))
	assert.Equal(t, v1alpha1.PhaseRemediating, s.nhc.Status.Phase, "the input is not modified")
}

func TestStatusRecordsOnlyWhatHappened(t *testing.T) {
	// The first step's timeout passed: the plan times it out and creates the
	// next step. The status shows each only once its write succeeded.
	resources := remediations(remediationOf(templateA, "sick", 10*time.Minute))
	in := Input{NHC: testNHC(threeSteps()), Nodes: oneSick(), Remediations: resources, Now: now}
	p := Evaluate(in)
	require.Len(t, p.TimeOut, 1)
	require.Len(t, p.Create, 1)
	next := corev1.ObjectReference{APIVersion: multiOne.APIVersion, Kind: "Multi", Namespace: "ns", Name: "sick-next", UID: "next-uid"}
	cases := []struct {
		name          string
		out           Outcome
		wantTimedOut  bool
		wantResources int
	}{
		{"both writes failed", Outcome{}, false, 1},
		{"the annotation failed, so nothing was created", Outcome{Errors: []error{assert.AnError}}, false, 1},
		{"annotated, the create failed", Outcome{TimedOut: p.TimeOut, Errors: []error{assert.AnError}}, true, 1},
		{"annotated and created", Outcome{TimedOut: p.TimeOut, Created: []Created{{Creation: p.Create[0], Resource: next, CreationTime: now}}}, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := Status(in, &p, &tc.out)
			require.Len(t, status.UnhealthyNodes, 1)
			rems := status.UnhealthyNodes[0].Remediations
			require.Len(t, rems, tc.wantResources)
			if tc.wantTimedOut {
				assert.Equal(t, ptr.To(metav1.NewTime(now)), rems[0].TimedOut)
			} else {
				assert.Nil(t, rems[0].TimedOut, "the status must not claim a time-out that was not written")
			}
			if tc.wantResources == 2 {
				assert.Equal(t, next, rems[1].Resource)
			}
		})
	}
}

func TestLastUpdateTimeMovesOnlyWithAChange(t *testing.T) {
	s := newSimulation(testNHC(), 3)
	s.fail("node-00")
	first := s.evaluate().Status
	require.NotNil(t, first.LastUpdateTime)
	assert.Equal(t, metav1.NewTime(now), *first.LastUpdateTime)

	s.advance(time.Minute)
	assert.Equal(t, first, s.evaluate().Status, "nothing changed: the same status, so no write")

	s.recover("node-00")
	recovered := s.evaluate().Status
	require.Len(t, recovered.UnhealthyNodes, 1, "the resource is being deleted: the status waits to see it gone")
	assert.Equal(t, first.UnhealthyNodes[0].Remediations, recovered.UnhealthyNodes[0].Remediations)
	assert.Equal(t, metav1.NewTime(now.Add(time.Minute)), *recovered.UnhealthyNodes[0].ConditionsHealthyTimestamp, "its recovery is marked")
	assert.Equal(t, metav1.NewTime(now.Add(time.Minute)), *recovered.LastUpdateTime)
	s.advance(time.Second)
	changed := s.evaluate().Status
	assert.Empty(t, changed.UnhealthyNodes)
	assert.Equal(t, metav1.NewTime(now.Add(time.Minute+time.Second)), *changed.LastUpdateTime)
}

func TestMessagesFitWhatTheAPIAccepts(t *testing.T) {
	long := strings.Repeat("é", 40000)
	d := decide(Input{NHC: testNHC(), Nodes: oneSick(), Now: now, RemediationProblem: &Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: long}})
	c := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDisabled)
	require.NotNil(t, c)
	assert.LessOrEqual(t, len(c.Message), 32768)
	assert.True(t, utf8.ValidString(c.Message), "cut on a character boundary")
	assert.True(t, strings.HasSuffix(c.Message, "..."))
	assert.LessOrEqual(t, len(d.Status.Reason), 1024)
	require.NotEmpty(t, d.Events)
	for _, e := range d.Events {
		assert.LessOrEqual(t, len("[remediation] "+e.Message), 1024, "an event message")
	}

	paused := testNHC(func(n *v1alpha1.NodeHealthCheck) {
		n.Spec.PauseRequests = slices.Repeat([]string{strings.Repeat("p", 64)}, 64)
	})
	assert.LessOrEqual(t, len(decide(Input{NHC: paused, Nodes: oneSick(), Now: now}).Status.Reason), 1024)
}

// The sync that deletes a node's resources on its recovery leaves its entry
// as last written, for the sync that sees the deletion, but marks the
// recovery (conditionsHealthyTimestamp): a relapse before the resources are
// gone must not take them for steps of a new incident. A node the last
// status did not list is listed as it is.
func TestStatusWaitsToSeeADeletion(t *testing.T) {
	ref := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediation", Namespace: "default", Name: "node-00", UID: "uid-1"}
	started := metav1.NewTime(now.Add(-time.Hour))
	resources := map[string][]Remediation{"node-00": {{Ref: ref, Created: started.Time}}}
	written := &v1alpha1.UnhealthyNode{Name: "node-00", Remediations: []*v1alpha1.Remediation{{Resource: ref, Started: started}}}
	listed := testNHC()
	listed.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{written}
	recovering := written.DeepCopy()
	recovering.ConditionsHealthyTimestamp = ptr.To(metav1.NewTime(now))

	cases := []struct {
		name string
		nhc  *v1alpha1.NodeHealthCheck
		want *v1alpha1.UnhealthyNode
	}{
		{"listed: as written, its recovery marked", listed, recovering},
		{"not listed: recovering", testNHC(), recovering},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluate(tc.nhc, []*nodeview.Node{testNode("node-00")}, resources)
			require.Len(t, d.Delete, 1)
			assert.Equal(t, tc.want, entryOf(d, "node-00"))
		})
	}
}

// Statuses equal but for how their times are held (a time decoded from the
// API server against one this controller made) are the same: no write.
func TestSameStatusComparesTimesByTheirInstant(t *testing.T) {
	instant := time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)
	decoded := v1alpha1.NodeHealthCheckStatus{LastUpdateTime: &metav1.Time{Time: instant}}
	made := v1alpha1.NodeHealthCheckStatus{LastUpdateTime: &metav1.Time{Time: instant.In(time.FixedZone("CET", 3600))}}
	assert.True(t, SameStatus(&decoded, &decoded))
	assert.True(t, SameStatus(&decoded, &made))
	later := v1alpha1.NodeHealthCheckStatus{LastUpdateTime: &metav1.Time{Time: instant.Add(time.Second)}}
	assert.False(t, SameStatus(&decoded, &later))
}

// A status is stored as made: the controller keeps the status it sent as
// the stored object, so each time it records is already at the API's
// precision, whole seconds, whatever the clock's and the durations'.
func TestAStatusReadsBackAsMade(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 2000 {
		data := make([]byte, 64+rng.IntN(512))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		in := fuzzInput(data)
		in.Now = in.Now.Add(time.Duration(1 + rng.IntN(int(time.Second-1))))
		for c := range in.NHC.Spec.UnhealthyConditions {
			in.NHC.Spec.UnhealthyConditions[c].Duration.Duration += 250 * time.Millisecond
		}
		made := decide(in).Status
		encoded, err := json.Marshal(&made)
		require.NoError(t, err)
		var stored v1alpha1.NodeHealthCheckStatus
		require.NoError(t, json.Unmarshal(encoded, &stored))
		if !assert.True(t, SameStatus(&made, &stored), "input %d: the status read back differs from the one made", i) {
			return
		}
	}
}
