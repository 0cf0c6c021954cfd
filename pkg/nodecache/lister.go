package nodecache

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Lister reads the cached nodes, as client-go's NodeLister does.
type Lister struct {
	indexer cache.Indexer
	// heartbeats knows the heartbeats the watch passed over; nil reads
	// every node's own resourceVersion.
	heartbeats *heartbeats
}

// NewLister returns the lister of an indexer of nodes.
func NewLister(indexer cache.Indexer) Lister {
	return Lister{indexer: indexer}
}

// List returns the nodes whose labels the selector matches. It reads
// nodeview.Node's Labels, which cache.ListAll would not: it reads
// ObjectMeta's.
func (l Lister) List(selector labels.Selector) ([]*nodeview.Node, error) {
	var nodes []*nodeview.Node
	for _, obj := range l.indexer.List() {
		if node := obj.(*nodeview.Node); selector.Matches(node.Labels) {
			nodes = append(nodes, node)
		}
	}
	return nodes, nil
}

// Get returns the node of that name, or a NotFound error.
func (l Lister) Get(name string) (*nodeview.Node, error) {
	obj, exists, err := l.indexer.GetByKey(name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(corev1.Resource("node"), name)
	}
	return obj.(*nodeview.Node), nil
}

// CurrentVersion returns the resourceVersion at which the watch last saw
// the cached node of that name as the cache holds it, or a NotFound
// error. A heartbeat that changed nothing the cache keeps moves it on
// (heartbeats): the cached node's own resourceVersion stays older than the
// API server's while it is just as current.
func (l Lister) CurrentVersion(name string) (string, error) {
	node, err := l.Get(name)
	if err != nil {
		return "", err
	}
	if l.heartbeats == nil {
		return node.ResourceVersion, nil
	}
	return l.heartbeats.currentVersion(node), nil
}

// Shows tells whether the cache holds the node of that name at least as
// new as resourceVersion (heartbeats included). An opaque resourceVersion
// cannot be compared: a node held counts as shown.
func (l Lister) Shows(name, resourceVersion string) bool {
	current, err := l.CurrentVersion(name)
	if err != nil {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(current, resourceVersion)
	return err != nil || order >= 0
}

// HoldsVersion tells whether the cache holds every node as new as
// resourceVersion or newer: its store has applied that version of the
// collection, or a later one, a change or a bookmark (heartbeats
// included). A node it does not hold then did not exist at that version,
// or was deleted since. False while the store cannot tell (client-go's
// AtomicFIFO off) or the versions cannot be compared.
func (l Lister) HoldsVersion(resourceVersion string) bool {
	held := l.indexer.LastStoreSyncResourceVersion()
	if held == "" || resourceVersion == "" {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(held, resourceVersion)
	return err == nil && order >= 0
}
