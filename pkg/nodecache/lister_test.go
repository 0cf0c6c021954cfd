package nodecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestListerReadsTheCache(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	worker := &nodeview.Node{Meta: nodeview.Meta{Name: "worker-1"}, Labels: nodeview.LabelsOf("worker-1", map[string]string{"role": "worker"}, nil)}
	infra := &nodeview.Node{Meta: nodeview.Meta{Name: "infra-1"}, Labels: nodeview.LabelsOf("infra-1", map[string]string{"role": "infra"}, nil)}
	require.NoError(t, indexer.Add(worker))
	require.NoError(t, indexer.Add(infra))
	lister := NewLister(indexer)

	got, err := lister.Get("worker-1")
	require.NoError(t, err)
	assert.Same(t, worker, got)
	_, err = lister.Get("gone")
	assert.True(t, apierrors.IsNotFound(err), "a missing node is NotFound, as client-go's listers say")

	workers, err := lister.List(labels.SelectorFromSet(labels.Set{"role": "worker"}))
	require.NoError(t, err)
	assert.Equal(t, []*nodeview.Node{worker}, workers)
	all, err := lister.List(labels.Everything())
	require.NoError(t, err)
	assert.ElementsMatch(t, []*nodeview.Node{worker, infra}, all)
}

// A heartbeat the watch passed on as a bookmark leaves the cached node as
// it was, current at the heartbeat's resourceVersion.
func TestCurrentVersionFollowsHeartbeats(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	node := contentNode("a", "10")
	require.NoError(t, indexer.Add(node))
	heartbeats := newHeartbeats(func(string) *nodeview.Node { return node })
	lister := Lister{indexer: indexer, heartbeats: heartbeats}

	version, err := lister.CurrentVersion("worker-1")
	require.NoError(t, err)
	assert.Equal(t, "10", version, "no watch event seen: the node's own")
	heartbeats.observe(watch.Added, node)
	require.True(t, heartbeats.observe(watch.Modified, contentNode("a", "12")))
	version, err = lister.CurrentVersion("worker-1")
	require.NoError(t, err)
	assert.Equal(t, "12", version)
	version, err = NewLister(indexer).CurrentVersion("worker-1")
	require.NoError(t, err)
	assert.Equal(t, "10", version, "a lister without a watch reads the node's own")
	_, err = lister.CurrentVersion("gone")
	assert.True(t, apierrors.IsNotFound(err))
}

// The cache holds a revision once its store applied it or a later one, a
// change or a bookmark; never while it cannot tell.
func TestTheCacheHoldsARevisionOnceItsStoreAppliedIt(t *testing.T) {
	for _, tt := range []struct {
		name, applied, asked string
		holds                bool
	}{
		{"nothing applied", "", "10", false},
		{"behind", "9", "10", false},
		{"at it", "10", "10", true},
		{"past it", "11", "10", true},
		{"past it, longer", "100", "99", true},
		{"no revision asked", "10", "", false},
		{"not comparable", "10", "x1", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tt.applied != "" {
				indexer.Bookmark(tt.applied)
			}
			assert.Equal(t, tt.holds, NewLister(indexer).HoldsVersion(tt.asked))
		})
	}
}
