package health

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestPause(t *testing.T) {
	list := append(nodes("healthy", 3), testNode("sick", unhealthy), testNode("back"))
	resources := remediations(snrRemediation("back", time.Hour), snrRemediation("gone", time.Hour))
	d := evaluate(testNHC(paused), list, resources)

	assert.Empty(t, d.Create, "no new remediation starts")
	assert.Equal(t, WaitPaused, verdictOf(d, "sick").Waiting)
	assert.Equal(t, []string{"back", "gone"}, deletedNames(d), "healthy nodes and orphans are still cleaned up")
	assert.Equal(t, 5, d.Observed, "counters stay truthful (upstream reports 0)")
	assert.Equal(t, 3, d.Healthy)
	assert.Equal(t, int32(5), *d.Status.ObservedNodes)
	assert.Equal(t, v1alpha1.PhasePaused, d.Status.Phase)
	assert.Equal(t, "NHC is paused: upgrade by @admin", d.Status.Reason)
}

func TestPauseDefersEscalation(t *testing.T) {
	resources := remediations(remediationOf(templateA, "sick", time.Hour))
	d := evaluate(testNHC(threeSteps(), paused), oneSick(), resources)
	assert.Empty(t, d.TimeOut, "the running step keeps running")
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitPaused, verdictOf(d, "sick").Waiting)
	assert.Nil(t, entryOf(d, "sick").Remediations[0].TimedOut)

	d = evaluate(testNHC(threeSteps()), oneSick(), resources)
	assert.Len(t, d.TimeOut, 1, "resumed: the overdue step times out at once")
	assert.Len(t, d.Create, 1)
}

func TestDisabledCreatesNothingButCleansUp(t *testing.T) {
	list := append(nodes("healthy", 3), testNode("sick", unhealthy), testNode("back"))
	resources := remediations(snrRemediation("back", time.Hour))
	d := decide(Input{
		NHC: testNHC(), Nodes: list, Remediations: resources, Now: now,
		RemediationProblem: &Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "template snr/automatic not found"},
	})
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitDisabled, verdictOf(d, "sick").Waiting)
	assert.Equal(t, []string{"back"}, deletedNames(d))
	assert.Equal(t, v1alpha1.PhaseDisabled, d.Status.Phase)
	assert.Equal(t, "NHC is disabled: RemediationTemplateNotFound: template snr/automatic not found", d.Status.Reason)
}

func TestExcludeLabel(t *testing.T) {
	cases := []struct {
		name        string
		value       string
		wantCreated bool
		wantWarning bool
	}{
		{"true excludes", "true", false, false},
		{"false does not", "false", true, false},
		{"an empty value does not, with a warning", "", true, true},
		{"True (not exactly true) does not", "True", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list := append(nodes("healthy", 2), testNode("sick", unhealthy, label(v1alpha1.ExcludeFromRemediationLabel, tc.value)))
			d := evaluate(testNHC(), list, nil)
			assert.Equal(t, tc.wantCreated, len(d.Create) == 1)
			if !tc.wantCreated {
				assert.Equal(t, WaitExcluded, verdictOf(d, "sick").Waiting)
				assert.NotNil(t, entryOf(d, "sick"), "an excluded unhealthy node is still listed")
			}
			if tc.wantWarning {
				require.Len(t, d.Warnings, 1)
				assert.Equal(t, "InvalidNodeLabel", d.Warnings[0].Reason)
				assert.Equal(t, "sick", d.Warnings[0].Node)
			} else {
				assert.Empty(t, d.Warnings)
			}
		})
	}
}

func TestExcludedNodeKeepsItsRunningRemediationButDoesNotEscalate(t *testing.T) {
	list := append(nodes("healthy", 2), testNode("sick", unhealthy, label(v1alpha1.ExcludeFromRemediationLabel, "true")))
	resources := remediations(remediationOf(templateA, "sick", time.Hour))
	d := evaluate(testNHC(threeSteps()), list, resources)
	assert.Empty(t, d.Delete)
	assert.Empty(t, d.TimeOut)
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitExcluded, verdictOf(d, "sick").Waiting)
}

func TestControlPlaneNodesOneAtATime(t *testing.T) {
	healthyWorkers := nodes("worker", 6)
	cases := []struct {
		name        string
		nodes       []*nodeview.Node
		resources   map[string][]Remediation
		busy        map[string]bool
		wantCreated []string
	}{
		{
			name:        "of two unhealthy control-plane nodes, the one unhealthy longer goes first",
			nodes:       []*nodeview.Node{testNode("cp-b", controlPlane, notReady(time.Hour)), testNode("cp-a", controlPlane, notReady(30*time.Minute)), testNode("worker-sick", unhealthy)},
			wantCreated: []string{"cp-b", "worker-sick"},
		},
		{
			name:        "unhealthy since the same instant: by name",
			nodes:       []*nodeview.Node{testNode("cp-c", controlPlane, unhealthy), testNode("cp-a", controlPlane, unhealthy), testNode("cp-b", controlPlane, unhealthy)},
			wantCreated: []string{"cp-a"},
		},
		{
			name:        "the master label counts too",
			nodes:       []*nodeview.Node{testNode("m-1", label(v1alpha1.MasterRoleLabel, ""), unhealthy), testNode("m-2", label(v1alpha1.MasterRoleLabel, ""), notReady(2*time.Hour))},
			wantCreated: []string{"m-2"},
		},
		{
			name:        "another control-plane node under our remediation blocks",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy), testNode("cp-b", controlPlane, notReady(time.Minute))},
			resources:   remediations(snrRemediation("cp-b", time.Minute, controlPlaneLabel)),
			wantCreated: nil,
		},
		{
			name:        "a control-plane remediation pending deletion still blocks",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy), testNode("cp-b", controlPlane)},
			resources:   remediations(snrRemediation("cp-b", time.Minute, controlPlaneLabel, deleting)),
			wantCreated: nil,
		},
		{
			name:        "a control-plane orphan blocks",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			resources:   remediations(snrRemediation("cp-gone", time.Minute, controlPlaneLabel, permanentNodeDeletion)),
			wantCreated: nil,
		},
		{
			name:        "another owner's control-plane remediation blocks",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			busy:        map[string]bool{"cp-z": true},
			wantCreated: nil,
		},
		{
			name:        "another owner's remediation of the same node is no other node",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			busy:        map[string]bool{"cp-a": true},
			wantCreated: []string{"cp-a"},
		},
		{
			name:        "workers are not limited",
			nodes:       []*nodeview.Node{testNode("worker-sick-1", unhealthy), testNode("worker-sick-2", unhealthy), testNode("cp-a", controlPlane, unhealthy)},
			busy:        map[string]bool{"cp-z": true},
			wantCreated: []string{"worker-sick-1", "worker-sick-2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(Input{
				NHC: testNHC(minHealthy(intstr.FromInt32(1))), Nodes: append(tc.nodes, healthyWorkers...),
				Remediations: tc.resources, BusyControlPlaneNodes: tc.busy, Now: now,
			})
			assert.Equal(t, tc.wantCreated, createdNodes(d))
			for _, c := range d.Create {
				assert.Equal(t, c.Node[:2] != "wo", c.ControlPlane)
			}
			for _, v := range d.Nodes {
				if v.ControlPlane && v.State == StateUnhealthy && v.Remediations == 0 && !slices.Contains(tc.wantCreated, v.Node.Name) {
					assert.Equal(t, WaitControlPlane, v.Waiting, v.Node.Name)
				}
			}
		})
	}
}

// While not every control-plane remediation is known (after a start, before
// the kinds of every NodeHealthCheck are read), no control-plane node starts
// a remediation; workers and control-plane nodes already under remediation
// go on, and a known busy node says so rather than the unknown.
func TestNoControlPlaneRemediationStartsWhileTheBusyOnesAreUnknown(t *testing.T) {
	const why = "the remediation kinds of every NodeHealthCheck are not watched yet"
	list := append(nodes("worker", 6), testNode("cp-a", controlPlane, unhealthy), testNode("worker-sick", unhealthy), testNode("cp-b", controlPlane, notReady(2*time.Hour)))
	d := decide(Input{
		NHC: testNHC(minHealthy(intstr.FromInt32(1))), Nodes: list, ControlPlaneUnknown: why, Now: now,
		Remediations: remediations(snrRemediation("cp-b", 2*time.Minute, controlPlaneLabel)),
	})
	assert.Equal(t, []string{"worker-sick"}, createdNodes(d))
	assert.Equal(t, WaitControlPlane, verdictOf(d, "cp-a").Waiting, "cp-b is known to be under remediation")

	d = decide(Input{NHC: testNHC(minHealthy(intstr.FromInt32(1))), Nodes: list[:8], ControlPlaneUnknown: why, Now: now})
	assert.Equal(t, []string{"worker-sick"}, createdNodes(d))
	assert.Equal(t, WaitControlPlaneUnknown, verdictOf(d, "cp-a").Waiting)
	assert.Equal(t, now.Add(WaitRetry), d.NextDeadline)
	assert.Equal(t, "only one control-plane node at a time may be under remediation, and not all of those under remediation are known yet: "+why, d.because(ptr.To(verdictOf(d, "cp-a"))))
	assert.Contains(t, d.LastingEvents(&Outcome{}), "controlPlaneUnknown/cp-a")
	assert.Equal(t, "NHC is enabled, no ongoing remediation; 1 unhealthy nodes wait: 1 until every control-plane node's remediation is known", d.Status.Reason)
}

func TestWaitsForSomethingElseHaveAFallbackDeadline(t *testing.T) {
	// Another owner's control-plane remediation holds this control-plane node;
	// its deletion should wake the NodeHealthCheck, and a deadline does if
	// that event never comes.
	list := append(nodes("healthy", 3, controlPlane), testNode("cp-sick", controlPlane, unhealthy))
	d := decide(Input{NHC: testNHC(minHealthy(intstr.FromInt32(0))), Nodes: list, BusyControlPlaneNodes: map[string]bool{"cp-other": true}, Now: now})
	assert.Equal(t, WaitControlPlane, verdictOf(d, "cp-sick").Waiting)
	assert.Equal(t, now.Add(WaitRetry), d.NextDeadline)
}

// lostStep is a status entry of a node whose first step (templateA) timed
// out and whose resource a remediator or an operator deleted: the node has
// no resource, and its next step is due.
func lostStep(node string) *v1alpha1.UnhealthyNode {
	return &v1alpha1.UnhealthyNode{Name: node, Remediations: []*v1alpha1.Remediation{{
		Resource:     remediationOf(templateA, node, time.Hour).Ref,
		Started:      metav1.NewTime(now.Add(-time.Hour)),
		TimedOut:     ptr.To(metav1.NewTime(now.Add(-55 * time.Minute))),
		TemplateName: templateA.Name,
	}}}
}

// The one-control-plane-node rule holds every create of a control-plane
// node's resource, an escalation step's too: a node whose timed-out step
// lost its resource is no longer in the busy set, and its next step must
// not start beside another control-plane node's remediation. A closed gate
// holds the time-out with the next step, as the other gates do; a planned
// escalation joins the busy set, so no first remediation starts beside it.
func TestTheControlPlaneRuleHoldsEscalationsToo(t *testing.T) {
	const why = "the remediation kinds of every NodeHealthCheck are not watched yet"
	workers := nodes("worker", 6)
	cases := []controlPlaneEscalationCase{
		{
			name:     "a lost step's next one waits for another control-plane node's remediation",
			nodes:    []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			status:   []*v1alpha1.UnhealthyNode{lostStep("cp-a")},
			busy:     map[string]bool{"cp-z": true},
			wantWait: map[string]WaitReason{"cp-a": WaitControlPlane},
		},
		{
			name:      "a running step's time-out and next step wait for another control-plane node's remediation",
			nodes:     []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			resources: remediations(remediationOf(templateA, "cp-a", 6*time.Minute, controlPlaneLabel)),
			busy:      map[string]bool{"cp-z": true},
			wantWait:  map[string]WaitReason{"cp-a": WaitControlPlane},
		},
		{
			name:      "while control-plane remediations are unknown, a time-out and next step wait",
			nodes:     []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			resources: remediations(remediationOf(templateA, "cp-a", 6*time.Minute, controlPlaneLabel)),
			unknown:   why,
			wantWait:  map[string]WaitReason{"cp-a": WaitControlPlaneUnknown},
		},
		{
			name:        "a planned escalation holds back a first remediation of another control-plane node",
			nodes:       []*nodeview.Node{testNode("cp-b", controlPlane, notReady(2*time.Hour)), testNode("cp-a", controlPlane, unhealthy)},
			status:      []*v1alpha1.UnhealthyNode{lostStep("cp-a")},
			wantCreated: []string{"cp-a"},
			wantWait:    map[string]WaitReason{"cp-b": WaitControlPlane},
		},
		{
			name:        "of two control-plane escalations, one goes",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy), testNode("cp-b", controlPlane, unhealthy)},
			status:      []*v1alpha1.UnhealthyNode{lostStep("cp-a"), lostStep("cp-b")},
			wantCreated: []string{"cp-a"},
			wantWait:    map[string]WaitReason{"cp-b": WaitControlPlane},
		},
		{
			name:        "its own remediation is no other node",
			nodes:       []*nodeview.Node{testNode("cp-a", controlPlane, unhealthy)},
			resources:   remediations(remediationOf(templateA, "cp-a", 6*time.Minute, controlPlaneLabel)),
			busy:        map[string]bool{"cp-a": true},
			wantCreated: []string{"cp-a"},
			wantTimeOut: []string{"cp-a"},
		},
		{
			name:        "a worker's escalation is not held",
			nodes:       []*nodeview.Node{testNode("worker-sick", unhealthy)},
			status:      []*v1alpha1.UnhealthyNode{lostStep("worker-sick")},
			busy:        map[string]bool{"cp-z": true},
			unknown:     why,
			wantCreated: []string{"worker-sick"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, workers) })
	}
}

// controlPlaneEscalationCase is a case of
// TestTheControlPlaneRuleHoldsEscalationsToo: nodes with their resources,
// status, busy control-plane nodes and why those are unknown, and the nodes
// that get a resource, time out and wait.
type controlPlaneEscalationCase struct {
	name        string
	nodes       []*nodeview.Node
	resources   map[string][]Remediation
	status      []*v1alpha1.UnhealthyNode
	busy        map[string]bool
	unknown     string
	wantCreated []string
	wantTimeOut []string
	wantWait    map[string]WaitReason
}

// check decides the case, with workers beside its nodes, and asserts its
// creations, time-outs and waits.
func (tc controlPlaneEscalationCase) check(t *testing.T, workers []*nodeview.Node) {
	nhc := testNHC(threeSteps(), minHealthy(intstr.FromInt32(1)), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: tc.status}))
	d := decide(Input{
		NHC: nhc, Nodes: append(tc.nodes, workers...), Remediations: tc.resources,
		BusyControlPlaneNodes: tc.busy, ControlPlaneUnknown: tc.unknown, Now: now,
	})
	assert.Equal(t, tc.wantCreated, createdNodes(d))
	var timedOut []string
	for _, to := range d.TimeOut {
		timedOut = append(timedOut, to.Node)
	}
	assert.Equal(t, tc.wantTimeOut, timedOut, "a closed gate holds the time-out too")
	for node, wait := range tc.wantWait {
		assert.Equal(t, wait, verdictOf(d, node).Waiting, node)
	}
}
