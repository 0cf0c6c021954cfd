package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

func TestDisjoint(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"role=worker", "role=infra", true},
		{"role=worker", "role=worker", false},
		{"role=worker", "zone=a", false},
		{"role in (worker, infra)", "role in (infra, gpu)", false},
		{"role in (worker, infra)", "role notin (worker, infra)", true},
		{"role in (worker, infra)", "role notin (worker)", false},
		{"role!=worker", "role=worker", true},
		{"!node-role.kubernetes.io/control-plane,!node-role.kubernetes.io/master", "node-role.kubernetes.io/control-plane", true},
		{"node-role.kubernetes.io/worker", "node-role.kubernetes.io/control-plane", false},
		{"!role", "role notin (worker)", false},
		{"!role", "!role", false},
	}
	for _, tc := range cases {
		t.Run(tc.a+" and "+tc.b, func(t *testing.T) {
			a, err := labels.Parse(tc.a)
			require.NoError(t, err)
			b, err := labels.Parse(tc.b)
			require.NoError(t, err)
			assert.Equal(t, tc.want, disjoint(a, b))
			assert.Equal(t, tc.want, disjoint(b, a), "symmetric")
		})
	}
}

// olderNHC selects the workers too, and was created an hour before workersNHC.
func olderNHC() *v1alpha1.NodeHealthCheck {
	nhc := selectingNHC("older", "worker")
	nhc.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour))
	nhc.Spec.UnhealthyConditions = workersNHC().Spec.UnhealthyConditions
	return nhc
}

func TestSyncLeavesASharedNodeToTheNodeHealthCheckThatRemediatesIt(t *testing.T) {
	nhc := workersNHC()
	nhc.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	older := olderNHC()
	f := newSyncFixture(t, nhc, notReady("worker-1", longAgo), healthyNode("worker-2"))
	f.setNHC(t, older)
	f.setNHC(t, selectingNHC("infra", "infra"))
	overlapEvents := func() []string { return withReason(f.events(), health.EventNodesOverlap) }

	// Remediation resources cannot all be known yet (after a start): the
	// older one may be remediating.
	f.remediations.seen.ControlPlaneUnknown = "the remediation kinds of every NodeHealthCheck are not watched yet"
	_, err := f.sync()
	require.NoError(t, err)
	noActions(t, f)
	status := f.lastStatus(t)
	assert.Contains(t, status.Reason, "1 left to the NodeHealthChecks that remediate them (older)")
	c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionNodesOverlap)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "2 selected nodes are also selected by NodeHealthChecks older; only one NodeHealthCheck remediates a node, "+
		"the one already remediating it, else one that can act (not disabled, paused or deleting), the oldest whose unhealthy conditions hold on it: this one remediates 0, older remediates 2. Make the selectors disjoint", c.Message)
	assert.Len(t, overlapEvents(), 1)

	// Known, it is the older one: it remediates the node, by age.
	f.remediations.seen.ControlPlaneUnknown = ""
	syncAMinuteLater(t, f)
	noActions(t, f)
	assert.Empty(t, overlapEvents(), "one event per overlap")

	// This one remediates it when the other one is younger...
	require.NoError(t, f.nhcs.Delete(older))
	younger := selectingNHC("younger", "worker")
	younger.CreationTimestamp = t0
	f.setNHC(t, younger)
	syncAMinuteLater(t, f)
	require.Len(t, f.remediations.syncs, 3)
	assert.Len(t, f.remediations.syncs[2].creates, 1)

	// It keeps the node while its status records the step under way, even
	// when the step's resource is gone (its remediator deleted it) and an
	// older one comes: it creates the step again.
	f.setNHC(t, older)
	syncAMinuteLater(t, f)
	assert.Len(t, f.remediations.syncs[3].creates, 1)
	require.NoError(t, f.nhcs.Delete(older))
	// From here on, this one has no record of the node.
	forgotten := nhc.DeepCopy()
	forgotten.ResourceVersion = "100"
	f.setNHC(t, forgotten)

	// ...unless the other one has resources for it already, of any kind watched.
	f.remediations.seen.OtherOwners = map[string][]resource.Owner{"worker-1": {{Name: "younger", UID: younger.UID}}}
	syncAMinuteLater(t, f)
	assert.Empty(t, f.remediations.syncs[4].creates)

	// A deleted one's resources hold the node too.
	f.remediations.seen.OtherOwners = map[string][]resource.Owner{"worker-1": {{Name: "gone", UID: "uid-gone"}}}
	syncAMinuteLater(t, f)
	assert.Empty(t, f.remediations.syncs[5].creates)
	assert.Contains(t, f.lastStatus(t).Reason, "(gone)")

	// So do the resources a peer's status records, of a kind that cannot
	// be read (forbidden since the start): its informer shows nothing.
	f.remediations.seen.OtherOwners = nil
	recording := younger.DeepCopy()
	recording.ResourceVersion = "101"
	recording.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-1", Remediations: []*v1alpha1.Remediation{
		{Resource: snrOfWorker, TimedOut: &metav1.Time{Time: longAgo}}}}}
	f.setNHC(t, recording)
	f.remediations.seen.Unreadable = map[schema.GroupVersionKind]bool{snrOfWorker.GroupVersionKind(): true}
	syncAMinuteLater(t, f)
	assert.Empty(t, f.remediations.syncs[6].creates)
	assert.Contains(t, f.lastStatus(t).Reason, "(younger)")
}

// syncAMinuteLater syncs once a minute has passed.
func syncAMinuteLater(t *testing.T, f *syncFixture) {
	t.Helper()
	f.clock.Step(time.Minute)
	_, err := f.sync()
	require.NoError(t, err)
}

// An older NodeHealthCheck that cannot act (paused, disabled by its
// status, being deleted) does not keep a shared node from a younger one
// that can: the younger one remediates it. One whose own sync never reads
// (its kind is forbidden: disabled) holds the node only while remediation
// resources cannot all be known, never for good.
func TestSyncRemediatesASharedNodeThatAnOlderNodeHealthCheckCannot(t *testing.T) {
	forbidden := func(n *v1alpha1.NodeHealthCheck) {
		n.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDisabled, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonTemplateNotFound, Message: "Remediation resources testremediations.test.medik8s.io cannot be watched or written: forbidden"}}
	}
	cases := []struct {
		name   string
		older  func(*v1alpha1.NodeHealthCheck)
		reason string
	}{
		{"paused", func(n *v1alpha1.NodeHealthCheck) { n.Spec.PauseRequests = []string{"upgrade"} }, "paused"},
		{"disabled, its kind forbidden", forbidden, "disabled"},
		{"being deleted", func(n *v1alpha1.NodeHealthCheck) { n.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Time)) }, "being deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := workersNHC()
			nhc.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
			older := olderNHC()
			tc.older(older)
			f := newSyncFixture(t, nhc, notReady("worker-1", longAgo), healthyNode("worker-2"))
			f.setNHC(t, older)
			_, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, []string{"worker-1"}, createdNodes(f.remediations.creates()), "the younger one remediates the node")
			c := meta.FindStatusCondition(f.lastStatus(t).Conditions, v1alpha1.ConditionNodesOverlap)
			require.NotNil(t, c)
			assert.Contains(t, c.Message, "this one remediates 2.")
		})
	}

	// While remediation resources cannot all be known, it may be remediating.
	nhc := workersNHC()
	nhc.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	older := olderNHC()
	forbidden(older)
	f := newSyncFixture(t, nhc, notReady("worker-1", longAgo), healthyNode("worker-2"))
	f.setNHC(t, older)
	f.remediations.seen.ControlPlaneUnknown = "the remediation resources testremediations.test.medik8s.io cannot be read, and may hold a control-plane remediation"
	_, err := f.sync()
	require.NoError(t, err)
	noActions(t, f)
	assert.Contains(t, f.lastStatus(t).Reason, "1 left to the NodeHealthChecks that remediate them (older)")
}

// createdNodes lists the nodes a plan creates remediations for.
func createdNodes(creates []health.Creation) []string {
	var nodes []string
	for _, c := range creates {
		nodes = append(nodes, c.Node)
	}
	return nodes
}

// A NodeHealthCheck that can no longer act, or can again, wakes itself and
// those that may share its nodes: the owner of a shared node may change.
func TestANodeHealthCheckThatCanNoLongerActWakesItsPeers(t *testing.T) {
	workers, older, infra := selectingNHC("workers", "worker"), selectingNHC("older", "worker"), selectingNHC("infra", "infra")
	c := newTestController(t, workers, older, infra)
	disabled := older.DeepCopy()
	disabled.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDisabled, Status: metav1.ConditionTrue}}
	c.handlers.updateNHC(klog.Background(), older, disabled)
	assert.Equal(t, []string{"older", "workers"}, queued(c), "a status write that disables it")

	c.handlers.updateNHC(klog.Background(), disabled, older)
	assert.Equal(t, []string{"older", "workers"}, queued(c), "and one that enables it again: it may take a node back")

	deleting := older.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Time))
	c.handlers.updateNHC(klog.Background(), older, deleting)
	assert.Equal(t, []string{"older", "workers"}, queued(c), "being deleted")

	written := older.DeepCopy()
	written.Status.ObservedNodes = ptr.To[int32](3)
	c.handlers.updateNHC(klog.Background(), older, written)
	assert.Empty(t, queued(c), "another status write wakes nobody")
}

func TestOverlapsWakeEveryNodeHealthCheck(t *testing.T) {
	workers, infra := selectingNHC("workers", "worker"), selectingNHC("infra", "infra")
	c := newTestController(t, workers, infra)
	added := selectingNHC("new", "worker")
	require.NoError(t, c.handlers.byTemplate.Add(added))
	c.handlers.addNHC(klog.Background(), added)
	assert.Equal(t, []string{"infra", "new", "workers"}, queued(c))

	moved := added.DeepCopy()
	moved.Generation = 2
	moved.Spec.Selector.MatchLabels["role"] = "infra"
	c.handlers.updateNHC(klog.Background(), added, moved)
	assert.Equal(t, []string{"infra", "new", "workers"}, queued(c), "a new selector")

	paused := moved.DeepCopy()
	paused.Generation = 3
	paused.Spec.PauseRequests = []string{"upgrade"}
	// The informer stores the object before it calls the handlers.
	require.NoError(t, c.handlers.byTemplate.Update(paused))
	c.handlers.updateNHC(klog.Background(), moved, paused)
	assert.Equal(t, []string{"infra", "new"}, queued(c), "a pause wakes itself and those that may share its nodes")

	edited := paused.DeepCopy()
	edited.Generation = 4
	edited.Spec.HealthyDelay = &metav1.Duration{Duration: time.Minute}
	require.NoError(t, c.handlers.byTemplate.Update(edited))
	c.handlers.updateNHC(klog.Background(), paused, edited)
	assert.Equal(t, []string{"new"}, queued(c), "another spec change wakes itself only")

	require.NoError(t, c.handlers.byTemplate.Delete(paused))
	c.handlers.deleteNHC(klog.Background(), paused)
	assert.Equal(t, []string{"infra", "new", "workers"}, queued(c))
}

// claimsSource is the controller's source of a NodeHealthCheck whose
// remediation resources show nothing, and whose nodes are given.
type claimsSource struct {
	*cacheSource
	nodes []*nodeview.Node
}

func (s claimsSource) Remediations(context.Context, *v1alpha1.NodeHealthCheck) (gather.Seen, error) {
	return gather.Seen{Ready: true}, nil
}

func (s claimsSource) Selected(context.Context, *v1alpha1.NodeHealthCheck, labels.Selector, *gather.LeaveOut) (gather.Selection, error) {
	return gather.Selection{Nodes: s.nodes, CaughtUp: true}, nil
}

// BenchmarkClaims measures what finding the overlaps adds to a sync of a
// NodeHealthCheck that selects 10,000 nodes, beside 9 others: nothing to
// match against those whose selectors are disjoint from its own, one match
// per node against each of the others.
func BenchmarkClaims(b *testing.B) {
	const nodeCount, nhcCount = 10000, 10
	nodes := make([]*nodeview.Node, nodeCount)
	for i := range nodes {
		node := healthyNode(fmt.Sprintf("worker-%05d", i))
		node.Labels["pool"] = "pool-0"
		node.Labels["kubernetes.io/hostname"] = node.Name
		nodes[i] = nodeview.Of(node, nil)
	}
	// shared is how many other NodeHealthChecks select the same nodes; the
	// rest select pools of their own.
	for _, shared := range []int{0, 1, nhcCount - 1} {
		b.Run(fmt.Sprintf("shared=%d", shared), func(b *testing.B) {
			nhcs := make([]*v1alpha1.NodeHealthCheck, nhcCount)
			for i := range nhcs {
				nhcs[i] = selectingNHC(fmt.Sprintf("nhc-%d", i), "worker")
				nhcs[i].Spec.Selector.MatchLabels["pool"] = fmt.Sprintf("pool-%d", i)
				if i <= shared {
					nhcs[i].Spec.Selector.MatchLabels["pool"] = "pool-0"
				}
			}
			c := newTestController(b, nhcs...)
			src := claimsSource{cacheSource: &cacheSource{c: c, others: c.nhcs.Others(nhcs[0])}, nodes: nodes}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := gather.Gather(ctx, nhcs[0], src, t0.Time); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodeCount, "ns/node")
		})
	}
}
