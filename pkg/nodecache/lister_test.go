package nodecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

func TestListerReadsTheCache(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	worker := &health.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Labels: health.LabelsOf("worker-1", map[string]string{"role": "worker"})}
	infra := &health.Node{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}, Labels: health.LabelsOf("infra-1", map[string]string{"role": "infra"})}
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
	assert.Equal(t, []*health.Node{worker}, workers)
	all, err := lister.List(labels.Everything())
	require.NoError(t, err)
	assert.ElementsMatch(t, []*health.Node{worker, infra}, all)
}
