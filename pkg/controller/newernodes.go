package controller

import (
	"iter"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// newerNodes keeps the nodes that confirmed a create at the API server
// while the node cache shows them older: a sync decides from the newer
// until the cache shows it (read-your-reads, as ownWrites is for the
// status). A watch that went silent and then delivers its backlog one
// event at a time would otherwise show, between two of them, a recovery
// that ended before the create, and a sync would delete the remediation
// it had just confirmed and start the incident over.
type newerNodes struct {
	cache nodecache.Lister

	mu    sync.Mutex
	newer map[string]*nodeview.Node
}

func newNewerNodes(cache nodecache.Lister) *newerNodes {
	return &newerNodes{cache: cache, newer: map[string]*nodeview.Node{}}
}

// Confirmed keeps a node as a create's recheck read it at the API server.
func (n *newerNodes) Confirmed(node *nodeview.Node) {
	if node == nil || n.cache.Shows(node.Name, node.ResourceVersion) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if kept, ok := n.newer[node.Name]; ok && older(node, kept) {
		return
	}
	n.newer[node.Name] = node
}

// Forget drops a deleted node's copy: no sync reads it again.
func (n *newerNodes) Forget(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.newer, name)
}

// Newest replaces, in place, each of a NodeHealthCheck's selected nodes
// with the one a create confirmed, while the cache shows it older and the
// selector still matches it; a node the cache shows as new is forgotten.
func (n *newerNodes) Newest(nodes []*nodeview.Node, selector labels.Selector) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.newer) == 0 {
		return
	}
	for i, cached := range nodes {
		kept, ok := n.newer[cached.Name]
		switch {
		case !ok:
		case n.cache.Shows(kept.Name, kept.ResourceVersion):
			delete(n.newer, cached.Name)
		case selector.Matches(kept.Labels):
			nodes[i] = kept
		}
	}
}

// Names are the nodes kept newer: a decision reads their copy, so none
// is left out as quiet.
func (n *newerNodes) Names() iter.Seq[string] {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Values(slices.Collect(maps.Keys(n.newer)))
}

// older tells whether a node's resourceVersion is older than another's of
// the same name.
func older(node, than *nodeview.Node) bool {
	order, err := resourceversion.CompareResourceVersion(node.ResourceVersion, than.ResourceVersion)
	return err == nil && order < 0
}
