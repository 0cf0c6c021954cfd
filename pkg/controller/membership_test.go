package controller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func labelledNode(name, pool string) *nodeview.Node {
	return &nodeview.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Labels: nodeview.LabelsOf(name, map[string]string{"pool": pool}, nil)}
}

func names(nodes []*nodeview.Node) []string {
	var n []string
	for _, node := range nodes {
		n = append(n, node.Name)
	}
	slices.Sort(n)
	return n
}

func TestMembershipFollowsNodesAndSelectors(t *testing.T) {
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	lister := nodecache.NewLister(store)
	m := newMembership(lister)
	// set changes a node in the cache, then tells the membership, as the
	// informer and the node handlers do.
	set := func(node *nodeview.Node) {
		require.NoError(t, store.Update(node))
		m.Update(node.Name, node)
	}
	set(labelledNode("a-0", "a"))
	set(labelledNode("a-1", "a"))
	set(labelledNode("b-0", "b"))
	poolA := labels.SelectorFromSet(labels.Set{"pool": "a"})
	nodes, err := m.Nodes("nhc", poolA)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-0", "a-1"}, names(nodes), "built from the cache")

	set(labelledNode("b-1", "a"))
	set(labelledNode("a-0", "b"))
	nodes, _ = m.Nodes("nhc", poolA)
	assert.Equal(t, []string{"a-1", "b-1"}, names(nodes), "kept by the handlers")

	// A label change the handlers have not heard of yet: the cache decides.
	require.NoError(t, store.Update(labelledNode("a-1", "c")))
	nodes, _ = m.Nodes("nhc", poolA)
	assert.Equal(t, []string{"b-1"}, names(nodes), "never a node the selector does not match")

	// An update the handlers pass over (a condition): the cache's object is read.
	changed := labelledNode("b-1", "a")
	changed.Conditions = []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, corev1.ConditionFalse, time.Time{})}
	require.NoError(t, store.Update(changed))
	for range 2 {
		nodes, _ = m.Nodes("nhc", poolA)
		require.Len(t, nodes, 1)
		assert.Same(t, changed, nodes[0], "the object the cache holds")
	}

	require.NoError(t, store.Delete(labelledNode("b-1", "a")))
	m.Update("b-1", nil)
	nodes, _ = m.Nodes("nhc", poolA)
	assert.Empty(t, nodes, "deleted")

	nodes, _ = m.Nodes("nhc", labels.SelectorFromSet(labels.Set{"pool": "b"}))
	assert.Equal(t, []string{"a-0", "b-0"}, names(nodes), "a changed selector builds anew")
	m.Forget("nhc")
	assert.Empty(t, m.byNHC)
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
		m.Update(node.Name, node)
	}
	pool := labels.SelectorFromSet(labels.Set{"pool": "3"})
	b.Run("membership", func(b *testing.B) {
		for b.Loop() {
			_, _ = m.Nodes("nhc", pool)
		}
	})
	b.Run("match every node", func(b *testing.B) {
		for b.Loop() {
			_, _ = lister.List(pool)
		}
	})
}
