package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestRecheckJustBeforeTheCreate(t *testing.T) {
	nhc := testNHC(minHealthy(intstr.FromInt32(0)))
	nhc.Spec.Selector.MatchLabels = nil
	sick := testNode("sick", unhealthy)
	p := Evaluate(Input{NHC: nhc, Nodes: []*nodeview.Node{sick}, Now: now})
	require.Len(t, p.Create, 1)
	c := p.Create[0]
	edited := nhc.DeepCopy()
	edited.Generation++
	recreated := nhc.DeepCopy()
	recreated.UID = "another"
	statusWritten := nhc.DeepCopy()
	statusWritten.ResourceVersion = "another"
	cases := []struct {
		name string
		nhc  *v1alpha1.NodeHealthCheck
		node *nodeview.Node
		want string
	}{
		{"nothing changed", nhc, sick, ""},
		{"the NodeHealthCheck is gone", nil, sick, withdrawnNHCGone},
		{"it was deleted and created again", recreated, sick, withdrawnNHCGone},
		{"it was paused or edited", edited, sick, withdrawnSpecChanged},
		{"its status was written since", statusWritten, sick, withdrawnNHCChanged},
		{"the node is gone", nhc, nil, withdrawnNodeGone},
		{"the node recovered", nhc, testNode("sick"), withdrawnRecovered},
		{"the node is excluded", nhc, testNode("sick", unhealthy, label(v1alpha1.ExcludeFromRemediationLabel, "true")), withdrawnExcluded},
		{"the node became a control-plane node", nhc, testNode("sick", unhealthy, controlPlane), withdrawnRoleChanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var meta *metav1.ObjectMeta
			if tc.nhc != nil {
				meta = &tc.nhc.ObjectMeta
			}
			assert.Equal(t, tc.want, p.Recheck(meta, tc.node, c, now.Add(time.Second)))
		})
	}

	selecting := testNHC(minHealthy(intstr.FromInt32(0)))
	worker := testNode("sick", unhealthy, label("role", "worker"))
	p = Evaluate(Input{NHC: selecting, Nodes: []*nodeview.Node{worker}, Now: now})
	require.Len(t, p.Create, 1)
	assert.Equal(t, withdrawnDeselected, p.Recheck(&selecting.ObjectMeta, testNode("sick", unhealthy, label("role", "infra")), p.Create[0], now))
}

func TestMaxCreationsDefersTheRestToTheNextPlan(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(11)), stormThreshold(5)), 20)
	s.evaluate()
	s.fail(s.nodeNames(0, 9)...)
	in := func() Input {
		return Input{NHC: s.nhc, Nodes: s.nodes, Remediations: s.resources, MaxCreations: 3, Now: s.clock}
	}
	// The spec's storm example: 9 of 20 fail with minHealthy 11. All 9 may
	// start before the storm holds back the next, three a plan.
	created := 0
	for plan := 1; plan <= 3; plan++ {
		p := Evaluate(in())
		require.Len(t, p.Create, 3, "plan %d", plan)
		assert.Equal(t, 9-created-3, p.Deferred, "plan %d", plan)
		for _, c := range p.Create {
			s.resources[c.Node] = append(s.resources[c.Node], Remediation{Ref: corev1.ObjectReference{Name: c.Node, UID: types.UID("uid-" + c.Node)}, Created: s.clock, TemplateName: c.Template.Name})
		}
		created += 3
		if plan < 3 {
			assert.False(t, p.Storm.Active, "no storm while allowed remediations wait their turn")
			assert.Equal(t, WaitNextBatch, verdictOf(result{Plan: p}, p.Nodes[8].Node.Name).Waiting)
		} else {
			assert.True(t, p.Storm.Active, "then the storm")
		}
	}
}

// Held creates wait for the status write, as many as are due, and say why:
// no storm starts while they wait, and the node's why names the write.
func TestHeldCreatesWaitForTheStatusWrite(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(11)), stormThreshold(5)), 20)
	s.evaluate()
	s.fail(s.nodeNames(0, 9)...)
	p := Evaluate(Input{NHC: s.nhc, Nodes: s.nodes, Remediations: s.resources, MaxCreations: 1, CreatesHeld: true, Now: s.clock})
	assert.Empty(t, p.Create)
	assert.Equal(t, 9, p.Deferred)
	assert.False(t, p.Storm.Active, "no storm while allowed remediations wait for the write")
	waiting := verdictOf(result{Plan: p}, p.Nodes[8].Node.Name)
	assert.Equal(t, WaitStatusWrite, waiting.Waiting)
	assert.Contains(t, p.because(&waiting), "remediation guard")
}

func TestAnEscalationIsDeferredWhole(t *testing.T) {
	// Two steps time out; the plan may create one resource. The other node's
	// step keeps running, unannotated, until its next step can start with it.
	resources := remediationsFor("sick", remediationOf(templateA, "sick", 20*time.Minute))
	resources["second"] = []Remediation{remediationOf(templateA, "second", 20*time.Minute)}
	list := append(oneSick(), testNode("second", unhealthy))
	p := Evaluate(Input{NHC: testNHC(threeSteps(), minHealthy(intstr.FromInt32(0))), Nodes: list, Remediations: resources, MaxCreations: 1, Now: now})
	require.Len(t, p.Create, 1)
	require.Len(t, p.TimeOut, 1)
	assert.Equal(t, p.Create[0].Node, p.TimeOut[0].Node, "a time-out goes with its next step")
	assert.Equal(t, 1, p.Deferred)
}

// What the guard sees bounds the creates: one while the stored status
// shows no remediation, none while a resource it does not show exists or a
// write is not seen yet, the bound once it shows one.
func TestGuardedCreations(t *testing.T) {
	shown := v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "a", Remediations: []*v1alpha1.Remediation{{}}}}}
	waiting := v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "a"}}}
	resource := map[string][]Remediation{"a": {{}}}
	beingDeleted := map[string][]Remediation{"a": {{Deleting: true}}}
	for _, tt := range []struct {
		name      string
		stored    v1alpha1.NodeHealthCheckStatus
		resources map[string][]Remediation
		pending   bool
		max       int
		held      bool
	}{
		{"shown", shown, resource, true, 300, false},
		{"none shown, nothing there", waiting, nil, false, 1, false},
		{"none shown, a resource there", waiting, resource, false, 1, true},
		{"none shown, a resource being deleted", waiting, beingDeleted, false, 1, false},
		{"none shown, a write not seen", v1alpha1.NodeHealthCheckStatus{}, nil, true, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			maxCreations, held := GuardedCreations(&tt.stored, tt.resources, tt.pending, 300)
			assert.Equal(t, tt.max, maxCreations)
			assert.Equal(t, tt.held, held)
		})
	}
}

// A node whose create failed or was refused waits for its retry, and the
// others go first: under the remediation guard one create goes a plan,
// for the node unhealthy longest, and were its create always refused no
// other node would get one.
func TestANodeWhoseCreateFailedLetsTheOthersGoFirst(t *testing.T) {
	list := []*nodeview.Node{testNode("a-sick", unhealthy), testNode("b-sick", unhealthy)}
	nhc := testNHC(minHealthy(intstr.FromInt32(0)))
	retries := map[string]time.Time{"a-sick": now.Add(2 * time.Second)}
	p := Evaluate(Input{NHC: nhc, Nodes: list, MaxCreations: 1, CreateRetries: retries, Now: now})
	require.Len(t, p.Create, 1)
	assert.Equal(t, "b-sick", p.Create[0].Node, "the other node first")
	failed := verdictOf(result{Plan: p}, "a-sick")
	assert.Equal(t, WaitCreateFailed, failed.Waiting)
	assert.Contains(t, p.because(&failed), "failed or was refused")
	assert.Equal(t, now.Add(2*time.Second), p.NextDeadline)

	p = Evaluate(Input{NHC: nhc, Nodes: list, MaxCreations: 1, CreateRetries: retries, Now: now.Add(2 * time.Second)})
	require.Len(t, p.Create, 1)
	assert.Equal(t, "a-sick", p.Create[0].Node, "retried once its back-off ends")
}

// A step whose next step's create failed keeps running, unannotated, until
// the next step is retried with its time-out.
func TestAnEscalationWhoseCreateFailedWaitsWhole(t *testing.T) {
	resources := remediationsFor("sick", remediationOf(templateA, "sick", 20*time.Minute))
	in := Input{NHC: testNHC(threeSteps(), minHealthy(intstr.FromInt32(0))), Nodes: oneSick(), Remediations: resources,
		CreateRetries: map[string]time.Time{"sick": now.Add(time.Second)}, Now: now}
	p := Evaluate(in)
	assert.Empty(t, p.Create)
	assert.Empty(t, p.TimeOut, "a time-out goes with its next step")
	assert.Equal(t, WaitCreateFailed, verdictOf(result{Plan: p}, "sick").Waiting)

	in.Now = now.Add(time.Second)
	p = Evaluate(in)
	require.Len(t, p.Create, 1)
	require.Len(t, p.TimeOut, 1)
}

// A control-plane node waiting for its create's retry does not take the
// plan's one control-plane slot: another control-plane node goes.
func TestAControlPlaneNodeWaitingForItsRetryLetsAnotherGo(t *testing.T) {
	list := []*nodeview.Node{testNode("cp-a", unhealthy, controlPlane), testNode("cp-b", unhealthy, controlPlane), testNode("cp-c", controlPlane)}
	p := Evaluate(Input{NHC: testNHC(minHealthy(intstr.FromInt32(0))), Nodes: list, CreateRetries: map[string]time.Time{"cp-a": now.Add(time.Second)}, Now: now})
	require.Len(t, p.Create, 1)
	assert.Equal(t, "cp-b", p.Create[0].Node)
	assert.Equal(t, WaitCreateFailed, verdictOf(result{Plan: p}, "cp-a").Waiting)
}
