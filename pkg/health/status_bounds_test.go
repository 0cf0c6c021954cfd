package health

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// massFailure is 10,000 selected nodes, all unhealthy; with remediated, each
// has a remediation resource of a realistic size.
func massFailure(remediated bool) Input {
	nhc := testNHC(maxUnhealthy(intstr.FromString("100%")))
	in := Input{NHC: nhc, Remediations: map[string][]Remediation{}, Now: now}
	for i := range 10000 {
		name := fmt.Sprintf("worker-%05d.cluster.example.com", i)
		in.Nodes = append(in.Nodes, testNode(name, unhealthy))
		if remediated {
			r := snrRemediation(name, time.Hour)
			r.Ref.UID = types.UID(fmt.Sprintf("0b6c1d9e-3f47-4a8e-9c1b-%012d", i))
			in.Remediations[name] = []Remediation{r}
		}
	}
	return in
}

func TestAMassFailureKeepsTheStatusWritable(t *testing.T) {
	for _, remediated := range []bool{false, true} {
		t.Run(fmt.Sprintf("remediated=%v", remediated), func(t *testing.T) {
			in := massFailure(remediated)
			d := decide(in)
			nhc := in.NHC.DeepCopy()
			nhc.Status = d.Status
			data, err := json.Marshal(nhc)
			require.NoError(t, err)
			assert.Less(t, len(data), 1<<20, "the whole object, far below etcd's 1.5 MiB")
			assert.LessOrEqual(t, len(d.Status.UnhealthyNodes), MaxListedNodes)
			assert.Equal(t, int32(10000), *d.Status.ObservedNodes, "the counters count every node")
			if remediated {
				assert.Equal(t, int32(10000), *d.Status.RemediatingNodes)
				assert.Contains(t, d.Status.Reason, "nodes not listed in unhealthyNodes")
				assert.NotContains(t, eventReasons(d.Events), EventDetectedUnhealthy, "none for nodes under remediation, listed or not")
			}
			t.Logf("%d bytes, %d of 10000 nodes listed", len(data), len(d.Status.UnhealthyNodes))
		})
	}
}

func TestNodesUnderRemediationAreListedFirst(t *testing.T) {
	entries := []*v1alpha1.UnhealthyNode{{Name: "a-waiting"}, {Name: "b-remediated", Remediations: []*v1alpha1.Remediation{{
		Resource: corev1.ObjectReference{Name: "b"}}}}}
	for i := range MaxListedNodes {
		entries = append(entries, &v1alpha1.UnhealthyNode{Name: fmt.Sprintf("c-waiting-%05d", i)})
	}
	listed, unlisted, _ := bound(nil, entries, DefaultStatusBytes, nil)
	require.Len(t, listed, MaxListedNodes)
	assert.Equal(t, 2, unlisted)
	assert.Equal(t, []string{"a-waiting", "b-remediated"}, []string{listed[0].Name, listed[1].Name}, "the node under remediation kept first, and all sorted by name")
	assert.Equal(t, "c-waiting-04997", listed[len(listed)-1].Name, "the waiting ones fill the rest, by name")
}

// 3,000 nodes under remediation, their resources named with 200 characters
// as generated names of long node names are: every step's record stays in
// the status, so that when the remediators delete every resource, each
// node's step runs on its first clock (step B once A's time is up), listed
// or not in a full status.
func TestTheStatusBoundKeepsEveryIncidentsMemory(t *testing.T) {
	stepA, stepB := template("AlphaTemplate", "alpha"), template("BetaTemplate", "beta")
	steps := escalating(escalationStep(stepA, 1, 2*time.Minute), escalationStep(stepB, 2, 10*time.Minute))
	const count = 3000
	var nodeList []*nodeview.Node
	resources := map[string][]Remediation{}
	for i := range count {
		node := fmt.Sprintf("worker-%04d", i)
		nodeList = append(nodeList, testNode(node, notReady(time.Hour)))
		name := fmt.Sprintf("%s-%0188d", node, i)
		r := remediationOf(stepA, node, 30*time.Second, generatedName(name))
		r.Ref.UID = types.UID(fmt.Sprintf("0b6c1d9e-3f47-4a8e-9c1b-%012d", i))
		resources[node] = []Remediation{r}
	}
	nhc := testNHC(maxUnhealthy(intstr.FromString("100%")), steps)
	first := decide(Input{NHC: nhc, Nodes: nodeList, Remediations: resources, Now: now})
	require.Equal(t, count, len(first.Status.UnhealthyNodes), "every incident's record is listed")
	data, err := json.Marshal(first.Status)
	require.NoError(t, err)
	assert.Less(t, len(data), 1<<20)
	t.Logf("status of %d bytes", len(data))

	// The remediators deleted every resource; A's two minutes from its
	// first start are up 100 s later.
	later := testNHC(maxUnhealthy(intstr.FromString("100%")), steps, withStatus(first.Status))
	second := decide(Input{NHC: later, Nodes: nodeList, Remediations: map[string][]Remediation{}, Now: now.Add(100 * time.Second)})
	require.Equal(t, count, len(second.Create))
	for _, c := range second.Create {
		if !assert.Equal(t, "beta", c.Template.Name, "node %s: A ran on its first clock, B follows", c.Node) {
			break
		}
	}
}

func TestANewIncidentWaitsWhileTheStatusCannotRememberIt(t *testing.T) {
	stepA, stepB := template("AlphaTemplate", "alpha"), template("BetaTemplate", "beta")
	steps := escalating(escalationStep(stepA, 1, 2*time.Minute), escalationStep(stepB, 2, 10*time.Minute))
	const count, statusBytes = 100, 4000
	var nodeList []*nodeview.Node
	for i := range count {
		nodeList = append(nodeList, testNode(fmt.Sprintf("worker-%03d", i), notReady(time.Hour)))
	}
	nhc := testNHC(maxUnhealthy(intstr.FromString("100%")), steps)
	first := decide(Input{NHC: nhc, Nodes: nodeList, Remediations: map[string][]Remediation{}, StatusBytes: statusBytes, Now: now})
	started := len(first.Create)
	require.Positive(t, started)
	require.Less(t, started, count, "the status cannot remember every incident at once")
	resources := map[string][]Remediation{}
	for i, c := range first.Create {
		r := remediationOf(stepA, c.Node, 0, generatedName(fmt.Sprintf("%s-%0180d", c.Node, i)))
		r.Ref.UID = types.UID(fmt.Sprintf("0b6c1d9e-3f47-4a8e-9c1b-%012d", i))
		resources[c.Node] = []Remediation{r}
		first.created(c, r.Ref, now)
	}
	waiting := 0
	for _, v := range first.Nodes {
		if v.Waiting == WaitStatusFull {
			waiting++
		}
	}
	assert.Equal(t, count-started, waiting, "every other node waits, and says why")
	assert.Contains(t, first.Status.Reason, "the status remembers no more at once")

	// A step's time-out and the next step cost no more than the status holds:
	// every incident under way keeps its record, and no new one starts.
	later := testNHC(maxUnhealthy(intstr.FromString("100%")), steps, withStatus(first.Status))
	second := decide(Input{NHC: later, Nodes: nodeList, Remediations: resources, StatusBytes: statusBytes, Now: now.Add(3 * time.Minute)})
	require.Len(t, second.Create, started, "each incident under way moves to its next step")
	for _, c := range second.Create {
		require.Equal(t, "beta", c.Template.Name, "node %s", c.Node)
	}
	remembered := 0
	for _, entry := range second.Status.UnhealthyNodes {
		if len(entry.Remediations) > 0 {
			remembered++
		}
	}
	assert.Equal(t, started, remembered, "no incident under way is left out of the status")
}

// A compacted entry keeps the record of every resource that exists, so
// that the status shows the cluster: a step that timed out with
// Succeeded=True carries no annotation, and its record alone says it timed
// out, even behind a later step that timed out too.
func TestACompactedEntryKeepsTheRecordsOfResourcesThatExist(t *testing.T) {
	stepA, stepB, stepC := template("AlphaTemplate", "alpha"), template("BetaTemplate", "beta"), template("GammaTemplate", "gamma")
	steps := escalating(escalationStep(stepA, 1, time.Minute), escalationStep(stepB, 2, time.Minute), escalationStep(stepC, 3, 10*time.Minute))
	nodeList := []*nodeview.Node{testNode("worker-0", notReady(time.Hour)), testNode("worker-1", notReady(time.Hour))}
	resources := map[string][]Remediation{}
	var entries []*v1alpha1.UnhealthyNode
	for i, node := range []string{"worker-0", "worker-1"} {
		a := remediationOf(stepA, node, 3*time.Minute, succeeded(metav1.ConditionTrue))
		b := remediationOf(stepB, node, 2*time.Minute)
		c := remediationOf(stepC, node, time.Minute)
		a.Ref.UID, b.Ref.UID, c.Ref.UID = types.UID(fmt.Sprintf("a-%d", i)), types.UID(fmt.Sprintf("b-%d", i)), types.UID(fmt.Sprintf("c-%d", i))
		b.TimedOut = c.Created
		resources[node] = []Remediation{a, b, c}
		entries = append(entries, &v1alpha1.UnhealthyNode{Name: node, Remediations: []*v1alpha1.Remediation{
			{Resource: a.Ref, Started: metav1.NewTime(a.Created), TimedOut: ptr.To(metav1.NewTime(b.Created)), TemplateName: "alpha"},
			{Resource: b.Ref, Started: metav1.NewTime(b.Created), TimedOut: ptr.To(metav1.NewTime(c.Created)), TemplateName: "beta"},
			{Resource: c.Ref, Started: metav1.NewTime(c.Created), TemplateName: "gamma"},
		}})
	}
	nhc := testNHC(steps, withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: entries}))
	in := Input{NHC: nhc, Nodes: nodeList, Remediations: resources, StatusBytes: 600, Now: now}
	first := decide(in)
	require.Len(t, first.Status.UnhealthyNodes, 2)
	for _, entry := range first.Status.UnhealthyNodes {
		require.Len(t, entry.Remediations, 3, "node %s: compacted, with a record of each resource", entry.Name)
		assert.Empty(t, entry.Remediations[0].Resource.Name, "compacted")
		assert.NotNil(t, entry.Remediations[0].TimedOut, "node %s: A timed out", entry.Name)
	}
	in.NHC = testNHC(steps, withStatus(first.Status))
	second := decide(in)
	assert.Empty(t, second.TimeOut, "nothing times out again")
	assert.Empty(t, second.Create)
}

// A paused or disabled NodeHealthCheck's reason still says how many nodes
// the bound leaves out of unhealthyNodes.
func TestThePausedReasonCountsTheUnlistedNodes(t *testing.T) {
	var nodeList []*nodeview.Node
	for i := range 50 {
		nodeList = append(nodeList, testNode(fmt.Sprintf("worker-%02d", i), notReady(time.Hour)))
	}
	r := decide(Input{NHC: testNHC(paused), Nodes: nodeList, Remediations: map[string][]Remediation{}, StatusBytes: 1000, Now: now})
	assert.Equal(t, v1alpha1.PhasePaused, r.Status.Phase)
	assert.Less(t, len(r.Status.UnhealthyNodes), 50)
	assert.Contains(t, r.Status.Reason, fmt.Sprintf("%d nodes not listed", 50-len(r.Status.UnhealthyNodes)))
}

// An incident that ended leaves room at once: its record, still in the
// stored status while its resource's deletion was seen, is not counted
// against a new incident, which the status written now has room for.
func TestAnEndedIncidentLeavesRoomForTheNext(t *testing.T) {
	stepA, stepB := template("AlphaTemplate", "alpha"), template("BetaTemplate", "beta")
	steps := escalating(escalationStep(stepA, 1, 30*time.Second), escalationStep(stepB, 2, 30*time.Second))
	const statusBytes = 400
	ended := &v1alpha1.UnhealthyNode{Name: "recovered", ConditionsHealthyTimestamp: ptr.To(metav1.NewTime(now.Add(-30 * time.Second))),
		Remediations: []*v1alpha1.Remediation{{Resource: remediationOf(stepA, "recovered", time.Minute).Ref, Started: metav1.NewTime(now.Add(-time.Minute)), TemplateName: "alpha"}}}
	nodeList := []*nodeview.Node{testNode("recovered"), testNode("sick", notReady(time.Hour))}

	alone := decide(Input{NHC: testNHC(maxUnhealthy(intstr.FromInt32(1)), steps), Nodes: nodeList, Remediations: map[string][]Remediation{}, StatusBytes: statusBytes, Now: now})
	require.Len(t, alone.Create, 1, "the status has room for one incident")

	afterTheEnd := testNHC(maxUnhealthy(intstr.FromInt32(1)), steps, withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{ended}}))
	d := decide(Input{NHC: afterTheEnd, Nodes: nodeList, Remediations: map[string][]Remediation{}, StatusBytes: statusBytes, Now: now})
	require.Len(t, d.Create, 1, "the ended incident's record holds no room")
	assert.Equal(t, "sick", d.Create[0].Node)
	assert.Nil(t, entryOf(d, "recovered"), "the status drops the ended incident")
}
