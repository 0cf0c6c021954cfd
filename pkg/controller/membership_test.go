package controller

import (
	"fmt"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func labelledNode(name, pool string) *nodeview.Node {
	return &nodeview.Node{Meta: nodeview.Meta{Name: name}, Labels: nodeview.LabelsOf(name, map[string]string{"pool": pool}, nil)}
}

func names(nodes []*nodeview.Node) []string {
	var n []string
	for _, node := range nodes {
		n = append(n, node.Name)
	}
	slices.Sort(n)
	return n
}

func notReadyNode(node *nodeview.Node) *nodeview.Node {
	changed := *node
	changed.Conditions = []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, corev1.ConditionFalse, time.Time{})}
	return &changed
}

func TestMembershipFollowsNodesAndSelectors(t *testing.T) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	lister := nodecache.NewLister(store)
	m := newMembership(lister)
	// set changes a node in the cache, then tells the membership, as the
	// informer and the node handlers do.
	set := func(node *nodeview.Node) {
		require.NoError(t, store.Update(node))
		m.Update(node.Name)
	}
	quietness := health.QuietnessOf(&v1alpha1.NodeHealthCheckSpec{})
	all := func(selector labels.Selector) []string {
		sel, err := m.Nodes("nhc", selector, quietness, nil, false)
		require.NoError(t, err)
		return names(sel.Nodes)
	}
	set(labelledNode("a-0", "a"))
	set(labelledNode("a-1", "a"))
	set(labelledNode("b-0", "b"))
	poolA := labels.SelectorFromSet(labels.Set{"pool": "a"})
	assert.Equal(t, []string{"a-0", "a-1"}, all(poolA), "built from the cache")

	set(labelledNode("b-1", "a"))
	set(labelledNode("a-0", "b"))
	assert.Equal(t, []string{"a-1", "b-1"}, all(poolA), "kept by the handlers")

	// A handler reads the cache: one that runs late, after the node
	// changed again, places the newer node, never the older.
	require.NoError(t, store.Update(labelledNode("a-1", "c")))
	m.Update("a-1")
	m.Update("a-1")
	assert.Equal(t, []string{"b-1"}, all(poolA))

	changed := notReadyNode(labelledNode("b-1", "a"))
	set(changed)
	sel, _ := m.Nodes("nhc", poolA, quietness, nil, false)
	require.Len(t, sel.Nodes, 1)
	assert.Same(t, changed, sel.Nodes[0], "the object the cache holds")

	require.NoError(t, store.Delete(labelledNode("b-1", "a")))
	m.Update("b-1")
	assert.Empty(t, all(poolA), "deleted")

	assert.Equal(t, []string{"a-0", "b-0"}, all(labels.SelectorFromSet(labels.Set{"pool": "b"})), "a changed selector builds anew")
	m.Forget("nhc")
	assert.Empty(t, m.byNHC)
}

// With a leaveOut, a sync reads the members that are not quiet and those
// named, and counts the others; a node that turns unhealthy or healthy
// moves between the two as its handler runs.
func TestMembershipLeavesOutTheQuietNodes(t *testing.T) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	m := newMembership(nodecache.NewLister(store))
	set := func(node *nodeview.Node) {
		require.NoError(t, store.Update(node))
		m.Update(node.Name)
	}
	for i := range 6 {
		set(labelledNode(fmt.Sprintf("a-%d", i), "a"))
	}
	set(labelledNode("b-0", "b"))
	set(notReadyNode(labelledNode("a-5", "a")))
	pool := labels.SelectorFromSet(labels.Set{"pool": "a"})
	quietness := health.QuietnessOf(&v1alpha1.NodeHealthCheckSpec{})
	read := func(named ...string) memberSelection {
		sel, err := m.Nodes("nhc", pool, quietness, &gather.LeaveOut{Named: []iter.Seq[string]{slices.Values(named)}}, true)
		require.NoError(t, err)
		return sel
	}

	sel := read("a-1", "a-1", "a-5", "b-0", "gone")
	assert.Equal(t, []string{"a-1", "a-5"}, names(sel.Nodes), "the loud one and the named member, once")
	assert.Equal(t, 4, sel.Quiet)
	assert.Equal(t, []string{"a-0", "a-2", "a-3", "a-4"}, names(sel.quiet))

	set(notReadyNode(labelledNode("a-2", "a")))
	set(labelledNode("a-5", "a"))
	sel = read()
	assert.Equal(t, []string{"a-2"}, names(sel.Nodes))
	assert.Equal(t, 5, sel.Quiet)

	// Other unhealthy conditions tell other nodes apart: a set is built anew.
	unknownOnly := health.QuietnessOf(&v1alpha1.NodeHealthCheckSpec{UnhealthyConditions: []v1alpha1.UnhealthyCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}})
	sel, err := m.Nodes("nhc", pool, unknownOnly, &gather.LeaveOut{}, false)
	require.NoError(t, err)
	assert.Empty(t, sel.Nodes)
	assert.Equal(t, 6, sel.Quiet)
}

// BenchmarkSelectedNodes compares, for 10 pools of 1,000 nodes, a sync's
// reading of its pool through the membership with matching every node.
func BenchmarkSelectedNodes(b *testing.B) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	lister := nodecache.NewLister(store)
	m := newMembership(lister)
	for i := range 10000 {
		node := labelledNode(fmt.Sprintf("node-%05d", i), fmt.Sprint(i%10))
		require.NoError(b, store.Add(node))
		m.Update(node.Name)
	}
	pool := labels.SelectorFromSet(labels.Set{"pool": "3"})
	quietness := health.QuietnessOf(&v1alpha1.NodeHealthCheckSpec{})
	b.Run("membership", func(b *testing.B) {
		for b.Loop() {
			_, _ = m.Nodes("nhc", pool, quietness, nil, false)
		}
	})
	b.Run("membership, quiet left out", func(b *testing.B) {
		leaveOut := &gather.LeaveOut{Named: []iter.Seq[string]{slices.Values([]string{"node-00003"})}}
		for b.Loop() {
			_, _ = m.Nodes("nhc", pool, quietness, leaveOut, false)
		}
	})
	b.Run("match every node", func(b *testing.B) {
		for b.Loop() {
			_, _ = lister.List(pool)
		}
	})
}
