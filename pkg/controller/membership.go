package controller

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// membership keeps, per NodeHealthCheck, the names of the nodes its selector
// matches, so that a sync reads its own nodes instead of matching every node
// of the cluster. The node handlers keep it current; a set is built from the
// node cache the first time a selector is asked for.
type membership struct {
	mu sync.Mutex
	// byNHC holds each NodeHealthCheck's set, with the selector it was built for.
	byNHC map[string]*memberSet
}

type memberSet struct {
	selector labels.Selector
	// key is the selector's string form: a changed selector builds anew.
	key   string
	nodes sets.Set[string]
}

func newMembership() *membership {
	return &membership{byNHC: map[string]*memberSet{}}
}

// nodes returns the nodes a NodeHealthCheck's selector matches. Each is
// matched again against the node as the cache has it now: a label change
// whose event has not reached the handlers yet never makes a node selected
// that is not.
func (m *membership) nodes(nhc string, selector labels.Selector, lister corelisters.NodeLister) ([]*corev1.Node, error) {
	names, err := m.members(nhc, selector, lister)
	if err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, 0, len(names))
	for _, name := range names {
		if node, err := lister.Get(name); err == nil && selector.Matches(labels.Set(node.Labels)) {
			nodes = append(nodes, node)
		}
	}
	return nodes, nil
}

// members returns the names in a NodeHealthCheck's set, building it when
// its selector is new. Building and the handlers' updates hold the same lock,
// and the cache changes before its handlers run, so a set never misses a
// change: built before an update, the update fixes it; built after, it reads
// the change.
func (m *membership) members(nhc string, selector labels.Selector, lister corelisters.NodeLister) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, ok := m.byNHC[nhc]
	if !ok || set.key != selector.String() {
		matching, err := lister.List(selector)
		if err != nil {
			return nil, err
		}
		set = &memberSet{selector: selector, key: selector.String(), nodes: sets.New[string]()}
		for _, node := range matching {
			set.nodes.Insert(node.Name)
		}
		m.byNHC[nhc] = set
	}
	return set.nodes.UnsortedList(), nil
}

// update places a node with these labels in the sets whose selector matches
// them, and takes it out of the others; nil labels take it out of all, for a
// deleted node.
func (m *membership) update(node string, nodeLabels map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, set := range m.byNHC {
		if nodeLabels != nil && set.selector.Matches(labels.Set(nodeLabels)) {
			set.nodes.Insert(node)
		} else {
			set.nodes.Delete(node)
		}
	}
}

// forget drops a deleted NodeHealthCheck's set.
func (m *membership) forget(nhc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byNHC, nhc)
}
