package gather

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

var (
	now        = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)
	testGVK    = schema.GroupVersionKind{Group: "test.medik8s.io", Version: "v1alpha1", Kind: "TestRemediation"}
	workerRole = map[string]string{"role": "worker"}
)

// fakeSource is a Source of the nodes, NodeHealthChecks and remediation
// resources given; every valid selector of another may share nodes.
type fakeSource struct {
	nhcs   []*v1alpha1.NodeHealthCheck
	nodes  []*nodeview.Node
	seen   Seen
	behind bool
}

func (f *fakeSource) Others(nhc *v1alpha1.NodeHealthCheck) []*v1alpha1.NodeHealthCheck {
	var others []*v1alpha1.NodeHealthCheck
	for _, other := range f.nhcs {
		if other.UID != nhc.UID {
			others = append(others, other)
		}
	}
	return others
}

func (f *fakeSource) Peers(nhc *v1alpha1.NodeHealthCheck) []health.SelectingPeer {
	var peers []health.SelectingPeer
	for _, other := range f.Others(nhc) {
		selector, _ := health.ParseSelector(&other.Spec.Selector)
		peers = append(peers, health.SelectingPeer{Peer: health.Peer{Name: other.Name, UID: other.UID, Created: other.CreationTimestamp.Time}, Selector: selector})
	}
	return peers
}

func (f *fakeSource) Remediations(context.Context, *v1alpha1.NodeHealthCheck) (Seen, error) {
	return f.seen, nil
}

// Selected leaves out what it may, as the controller's source does.
func (f *fakeSource) Selected(_ context.Context, nhc *v1alpha1.NodeHealthCheck, selector labels.Selector, leaveOut *LeaveOut) (Selection, error) {
	if f.behind {
		return Selection{}, nil
	}
	named := map[string]bool{}
	if leaveOut != nil {
		for _, seq := range leaveOut.Named {
			for name := range seq {
				named[name] = true
			}
		}
	}
	quietness := health.QuietnessOf(&nhc.Spec)
	sel := Selection{CaughtUp: true}
	for _, node := range f.nodes {
		switch {
		case !selector.Matches(node.Labels):
		case leaveOut != nil && quietness.Quiet(node) && !named[node.Name]:
			sel.Quiet++
		default:
			sel.Nodes = append(sel.Nodes, node)
		}
	}
	return sel, nil
}

func (f *fakeSource) Node(name string) (*nodeview.Node, error) {
	for _, node := range f.nodes {
		if node.Name == name {
			return node, nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func node(name string, extra map[string]string) *nodeview.Node {
	l := map[string]string{"role": "worker"}
	for k, v := range extra {
		l[k] = v
	}
	return &nodeview.Node{Meta: nodeview.Meta{Name: name}, Labels: nodeview.LabelsOf(name, l, nil)}
}

func nhcNamed(name string, created time.Time) *v1alpha1.NodeHealthCheck {
	return &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.NodeHealthCheckSpec{Selector: metav1.LabelSelector{MatchLabels: workerRole}},
	}
}

// recording is a NodeHealthCheck whose status records a remediation of a
// node whose step timed out: it holds the node by its record only while
// the kind cannot be read.
func recording(name, node string) *v1alpha1.NodeHealthCheck {
	nhc := nhcNamed(name, now.Add(-time.Hour))
	nhc.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: node, Remediations: []*v1alpha1.Remediation{{
		Resource: corev1.ObjectReference{APIVersion: testGVK.GroupVersion().String(), Kind: testGVK.Kind, Name: node},
		TimedOut: &metav1.Time{Time: now.Add(-time.Minute)},
	}}}}
	return nhc
}

// A node that another NodeHealthCheck's status records a remediation of,
// of a kind that cannot be read, is that one's; a control-plane node among
// them, or one that is gone (it may have been one), is under remediation:
// no second control-plane node starts. Of a kind that can be read, the
// caches tell, and the status is not asked.
func TestARecordedRemediationOfAnUnreadableKindHoldsItsNode(t *testing.T) {
	for _, tt := range []struct {
		name       string
		node       string
		unreadable bool
		busy       map[string]bool
		owned      bool
	}{
		{"a control-plane node recorded", "cp-0", true, map[string]bool{"cp-0": true}, true},
		{"a node that is gone recorded", "cp-gone", true, map[string]bool{"cp-gone": true}, true},
		{"a worker recorded", "worker-2", true, map[string]bool{}, true},
		{"a readable kind", "cp-0", false, map[string]bool{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := recording("other", tt.node)
			src := &fakeSource{
				nhcs:  []*v1alpha1.NodeHealthCheck{other},
				nodes: []*nodeview.Node{node("cp-0", map[string]string{v1alpha1.ControlPlaneRoleLabel: ""}), node("worker-2", nil)},
				seen:  Seen{Ready: true},
			}
			if tt.unreadable {
				src.seen.Unreadable = map[schema.GroupVersionKind]bool{testGVK: true}
			}
			h := holdersOf(src.Others(nhcNamed("workers", now)), &src.seen, src)
			assert.Equal(t, tt.busy, h.busyControlPlane)
			if tt.owned {
				assert.Equal(t, map[string][]resource.Owner{tt.node: {{Name: other.Name, UID: other.UID}}}, h.owners, "its kind is not watched: the status tells")
			} else {
				assert.Empty(t, h.owners)
			}
		})
	}
}

// The busy set is every source's control-plane nodes at once: the
// resources the caches show, the creates that hold the slot, and the
// records of what cannot be read.
func TestTheBusySetHoldsEveryControlPlaneNodeUnderRemediation(t *testing.T) {
	src := &fakeSource{
		nhcs: []*v1alpha1.NodeHealthCheck{recording("other", "cp-2")},
		seen: Seen{Ready: true, ControlPlane: []string{"cp-0"}, Reserved: []string{"cp-1"},
			Unreadable: map[schema.GroupVersionKind]bool{testGVK: true}},
	}
	g, err := Gather(context.Background(), nhcNamed("workers", now), src, now)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"cp-0": true, "cp-1": true, "cp-2": true}, g.BusyControlPlaneNodes)
}

// What is gathered once the resources are known, and what waits.
func TestGather(t *testing.T) {
	own := health.Remediation{Ref: corev1.ObjectReference{Name: "worker-1"}}
	for _, tt := range []struct {
		name     string
		seen     Seen
		behind   bool
		selector string
		want     func(t *testing.T, g Gathered)
	}{
		{"unknown resources: no nodes", Seen{Ready: false, RefreshAfter: time.Second}, false, "worker", func(t *testing.T, g Gathered) {
			assert.True(t, g.ResourcesUnknown)
			assert.Nil(t, g.Nodes)
			assert.Equal(t, time.Second, g.RefreshAfter)
		}},
		{"the node cache behind", Seen{Ready: true}, true, "worker", func(t *testing.T, g Gathered) {
			assert.True(t, g.Behind)
			assert.Nil(t, g.Nodes)
		}},
		{"selected nodes, a deleted one", Seen{Ready: true, Remediations: map[string][]health.Remediation{"worker-1": {own}, "worker-9": {own}}}, false, "worker", func(t *testing.T, g Gathered) {
			assert.Len(t, g.Nodes, 2)
			assert.Equal(t, map[string]bool{"worker-9": true}, g.DeletedNodes)
			assert.Len(t, g.Claims["worker-1"], 1, "the older one selects it too")
		}},
		{"an invalid selector selects the nodes under remediation", Seen{Ready: true, Remediations: map[string][]health.Remediation{"worker-1": {own}}}, false, "in (", func(t *testing.T, g Gathered) {
			require.Len(t, g.Nodes, 1)
			assert.Equal(t, "worker-1", g.Nodes[0].Name)
			assert.Nil(t, g.Selector)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nhc := nhcNamed("workers", now)
			nhc.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{tt.selector}}}}
			older := nhcNamed("older", now.Add(-time.Hour))
			src := &fakeSource{nhcs: []*v1alpha1.NodeHealthCheck{nhc, older}, nodes: []*nodeview.Node{node("worker-1", nil), node("worker-2", nil)}, seen: tt.seen, behind: tt.behind}
			g, err := Gather(context.Background(), nhc, src, now)
			require.NoError(t, err)
			assert.Equal(t, now, g.Now)
			tt.want(t, g)
		})
	}
}

// Without another NodeHealthCheck that may select its nodes, a decision
// sees the nodes that show something and those its input names (their
// resources, writes under way, leases, status entries and records, other
// owners), and counts the rest as quiet; with one, it sees them all, as
// the overlap counts every shared node.
func TestGatherLeavesOutTheQuietNodesOnlyWhenNoOtherMaySelectThem(t *testing.T) {
	own := health.Remediation{Ref: corev1.ObjectReference{Name: "worker-1"}}
	nodes := []*nodeview.Node{node("worker-0", nil), node("worker-1", nil), node("worker-2", nil), node("worker-3", nil), node("worker-4", nil), node("worker-5", nil)}
	notReady := *nodes[5]
	notReady.Conditions = []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, corev1.ConditionFalse, now)}
	nodes[5] = &notReady
	nhc := nhcNamed("workers", now)
	nhc.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-3"}}
	seen := Seen{Ready: true, Remediations: map[string][]health.Remediation{"worker-1": {own}}, Pending: map[string]bool{"worker-2": true},
		OtherOwners: map[string][]resource.Owner{"worker-4": {{Name: "gone", UID: "uid-gone"}}}}

	src := &fakeSource{nhcs: []*v1alpha1.NodeHealthCheck{nhc}, nodes: nodes, seen: seen}
	g, err := Gather(context.Background(), nhc, src, now)
	require.NoError(t, err)
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.Name)
	}
	assert.ElementsMatch(t, []string{"worker-1", "worker-2", "worker-3", "worker-4", "worker-5"}, names)
	assert.Equal(t, 1, g.QuietNodes, "worker-0")

	src.nhcs = append(src.nhcs, nhcNamed("older", now.Add(-time.Hour)))
	g, err = Gather(context.Background(), nhc, src, now)
	require.NoError(t, err)
	assert.Len(t, g.Nodes, 6)
	assert.Zero(t, g.QuietNodes)
}

// A peer's claim says whether it can act from its object as decisions see
// it, and whether it may be remediating while the resources cannot all be
// known; an owner that is gone is known by its name alone.
func TestClaims(t *testing.T) {
	paused := nhcNamed("paused", now.Add(-time.Hour))
	paused.Spec.PauseRequests = []string{"upgrade"}
	nodes := []*nodeview.Node{node("worker-1", nil)}
	selector, _ := health.ParseSelector(&paused.Spec.Selector)
	selecting := []health.SelectingPeer{{Peer: health.Peer{Name: paused.Name, UID: paused.UID, Created: paused.CreationTimestamp.Time}, Selector: selector}}
	for _, tt := range []struct {
		name    string
		owners  map[string][]resource.Owner
		unknown bool
		want    []health.Claim
	}{
		{"selects", nil, false, []health.Claim{{Peer: selecting[0].Peer, Selects: true, CannotAct: "paused"}}},
		{"unknown", nil, true, []health.Claim{{Peer: selecting[0].Peer, Selects: true, Resources: true, Remediating: true, CannotAct: "paused"}}},
		{"a gone owner", map[string][]resource.Owner{"worker-1": {{Name: "gone", UID: "uid-gone"}}}, false, []health.Claim{
			{Peer: selecting[0].Peer, Selects: true, CannotAct: "paused"}, {Peer: health.Peer{Name: "gone", UID: "uid-gone"}, Resources: true, Remediating: true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := claims(nodes, []*v1alpha1.NodeHealthCheck{paused}, selecting, holders{owners: tt.owners}, tt.unknown)
			assert.ElementsMatch(t, tt.want, got["worker-1"])
			assert.Empty(t, selecting[0].CannotAct, "the source's peers are left as they were")
		})
	}
}
