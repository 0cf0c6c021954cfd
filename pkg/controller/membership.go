package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// membership is an index of the nodes each NodeHealthCheck's selector
// matches, each told quiet or not (health.Quietness), so that a sync reads
// the nodes that show something instead of every node of its pool, let
// alone of the cluster. The node handlers keep it current; a set is built
// from the node cache the first time a selector and quietness are asked
// for.
//
// A set holds each member as the cache had it when the handlers last placed
// it: the handlers read the cache when they hear of a change, so a set
// never goes back to an older node, nor keeps a node deleted since. A sync
// reads its nodes as of the changes the handlers have placed; each change
// they place wakes the NodeHealthChecks it concerns.
type membership struct {
	cache nodecache.Lister
	mu    sync.Mutex
	// byNHC holds each NodeHealthCheck's set.
	byNHC map[string]*memberSet
}

type memberSet struct {
	selector  labels.Selector
	quietness health.Quietness
	// key is the selector's string form and the quietness's key: a change
	// of either builds anew.
	key string
	// nodes holds every member by name.
	nodes map[string]*nodeview.Node
	// loud holds the members that are not quiet.
	loud map[string]*nodeview.Node
}

func newMembership(cache nodecache.Lister) *membership {
	return &membership{cache: cache, byNHC: map[string]*memberSet{}}
}

// memberSelection is a sync's read of its members.
type memberSelection struct {
	gather.Selection
	// quiet are the nodes left out as quiet, when asked for (Nodes'
	// listQuiet), for a check of the decision against the whole.
	quiet []*nodeview.Node
}

// Nodes returns the nodes a NodeHealthCheck's selector matches, told by
// the quietness of its spec: with a leaveOut, the members that are not
// quiet and those named, counting the others; without, every member.
// listQuiet lists the nodes left out too.
func (m *membership) Nodes(nhc string, selector labels.Selector, quietness health.Quietness, leaveOut *gather.LeaveOut, listQuiet bool) (memberSelection, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	set, err := m.set(nhc, selector, quietness)
	if err != nil {
		return memberSelection{}, err
	}
	sel := memberSelection{Selection: gather.Selection{CaughtUp: true}}
	if leaveOut == nil {
		sel.Nodes = make([]*nodeview.Node, 0, len(set.nodes))
		for _, node := range set.nodes {
			sel.Nodes = append(sel.Nodes, node)
		}
		return sel, nil
	}
	sel.Nodes = make([]*nodeview.Node, 0, len(set.loud))
	for _, node := range set.loud {
		sel.Nodes = append(sel.Nodes, node)
	}
	var named map[string]bool
	for _, seq := range leaveOut.Named {
		for name := range seq {
			node, member := set.nodes[name]
			if _, loud := set.loud[name]; !member || loud || named[name] {
				continue
			}
			if named == nil {
				named = map[string]bool{}
			}
			named[name] = true
			sel.Nodes = append(sel.Nodes, node)
		}
	}
	sel.Quiet = len(set.nodes) - len(sel.Nodes)
	if listQuiet {
		for name, node := range set.nodes {
			if _, loud := set.loud[name]; !loud && !named[name] {
				sel.quiet = append(sel.quiet, node)
			}
		}
	}
	return sel, nil
}

// set returns a NodeHealthCheck's set, building it when its selector or
// quietness is new. Building and the handlers' updates hold the same lock
// and read the cache, so a set never misses a change: built before an
// update, the update places it; built after, it reads the change.
func (m *membership) set(nhc string, selector labels.Selector, quietness health.Quietness) (*memberSet, error) {
	key := selector.String() + "\x00" + quietness.Key()
	set, ok := m.byNHC[nhc]
	if ok && set.key == key {
		return set, nil
	}
	matching, err := m.cache.List(selector)
	if err != nil {
		return nil, err
	}
	set = &memberSet{selector: selector, quietness: quietness, key: key,
		nodes: make(map[string]*nodeview.Node, len(matching)), loud: map[string]*nodeview.Node{}}
	for _, node := range matching {
		set.place(node.Name, node)
	}
	m.byNHC[nhc] = set
	return set, nil
}

// Update places a node that changed, as the cache holds it now, in the
// sets whose selector matches its labels, and takes it out of the others;
// a node the cache no longer holds, out of all.
func (m *membership) Update(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	node, err := m.cache.Get(name)
	if err != nil {
		node = nil
	}
	for _, set := range m.byNHC {
		set.place(name, node)
	}
}

// place places a node in the set if its selector matches it, loud or
// quiet, and takes it out if not; a nil node, out.
func (s *memberSet) place(name string, node *nodeview.Node) {
	if node == nil || !s.selector.Matches(node.Labels) {
		delete(s.nodes, name)
		delete(s.loud, name)
		return
	}
	s.nodes[name] = node
	if s.quietness.Quiet(node) {
		delete(s.loud, name)
	} else {
		s.loud[name] = node
	}
}

// Forget drops a deleted NodeHealthCheck's set.
func (m *membership) Forget(nhc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byNHC, nhc)
}
