package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// membership is an index of the nodes each NodeHealthCheck's selector
// matches, so that a sync reads its own nodes instead of matching every
// node of the cluster against its selector. The node handlers keep it
// current; a set is built from the node cache the first time a selector is
// asked for.
type membership struct {
	cache nodecache.Lister
	mu    sync.Mutex
	// byNHC holds each NodeHealthCheck's set, with the selector it was built for.
	byNHC map[string]*memberSet
}

type memberSet struct {
	selector labels.Selector
	// key is the selector's string form: a changed selector builds anew.
	key string
	// nodes holds, by name, the labels each member was matched with: a
	// member whose node still has equal labels (one comparison, see
	// nodeview.Labels.Equal) needs no match again. Holding the labels rather
	// than the node keeps no replaced node alive.
	nodes map[string]nodeview.Labels
}

func newMembership(cache nodecache.Lister) *membership {
	return &membership{cache: cache, byNHC: map[string]*memberSet{}}
}

// Nodes returns the nodes a NodeHealthCheck's selector matches, as the cache
// has them now. A member whose labels are not the ones it was matched with
// is matched again, so a label change whose event has not
// reached the handlers yet never makes a node selected that is not.
func (m *membership) Nodes(nhc string, selector labels.Selector) ([]*nodeview.Node, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, err := m.set(nhc, selector)
	if err != nil {
		return nil, err
	}
	nodes := make([]*nodeview.Node, 0, len(set.nodes))
	for name, matched := range set.nodes {
		node, err := m.cache.Get(name)
		if err != nil {
			continue
		}
		if !node.Labels.Equal(matched) {
			if !selector.Matches(node.Labels) {
				// The handlers will take it out when they hear of the change.
				continue
			}
			set.nodes[name] = node.Labels
		}
		nodes = append(nodes, node)
	}
	return nodes, nil
}

// set returns a NodeHealthCheck's set, building it when its selector is
// new. Building and the handlers' updates hold the same lock, and the cache
// changes before its handlers run, so a set never misses a change: built
// before an update, the update fixes it; built after, it reads the change.
func (m *membership) set(nhc string, selector labels.Selector) (*memberSet, error) {
	set, ok := m.byNHC[nhc]
	if ok && set.key == selector.String() {
		return set, nil
	}
	matching, err := m.cache.List(selector)
	if err != nil {
		return nil, err
	}
	set = &memberSet{selector: selector, key: selector.String(), nodes: make(map[string]nodeview.Labels, len(matching))}
	for _, node := range matching {
		set.nodes[node.Name] = node.Labels
	}
	m.byNHC[nhc] = set
	return set, nil
}

// Update places a node, the object the cache holds, in the sets whose
// selector matches its labels, and takes it out of the others; a nil node
// takes it out of all, for a deleted node.
func (m *membership) Update(name string, node *nodeview.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, set := range m.byNHC {
		if node != nil && set.selector.Matches(node.Labels) {
			set.nodes[name] = node.Labels
		} else {
			delete(set.nodes, name)
		}
	}
}

// Forget drops a deleted NodeHealthCheck's set.
func (m *membership) Forget(nhc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byNHC, nhc)
}
