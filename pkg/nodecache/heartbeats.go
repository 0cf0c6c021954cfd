package nodecache

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// heartbeats tells a kubelet's heartbeat from a change. Most node updates
// change nothing a nodeview.Node keeps (heartbeat times, images, a new
// resourceVersion); the watch hands such an update to the informer as a
// bookmark, which moves its resourceVersion on and is neither stored nor
// handed to a handler. At 10,000 nodes that is nearly every update.
//
// An update is a heartbeat only when it equals the node the watch passed
// on last under that name, and the cache holds that very node: an update
// the informer has not stored yet may lie between the cache and the watch
// (a change, then the update that reverts it), and a watch that stops may
// drop an update it read (the next watch reads it again).
type heartbeats struct {
	// cached returns the cache's node of that name, or nil.
	cached func(name string) *nodeview.Node

	mu sync.Mutex
	// passed holds, by name, the node the watch passed on last.
	passed map[string]passedNode
}

type passedNode struct {
	node *nodeview.Node
	// current is the resourceVersion of the latest update equal to node.
	current string
}

func newHeartbeats(cached func(name string) *nodeview.Node) *heartbeats {
	return &heartbeats{cached: cached, passed: map[string]passedNode{}}
}

// observe records the node of a watch event, and tells whether the event
// is a heartbeat, to be passed on as a bookmark.
func (h *heartbeats) observe(event watch.EventType, node *nodeview.Node) (heartbeat bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch event {
	case watch.Deleted:
		delete(h.passed, node.Name)
		return false
	case watch.Modified:
		last, ok := h.passed[node.Name]
		if ok && h.cached(node.Name) == last.node && nodeview.Unchanged(last.node, node) {
			last.current = node.ResourceVersion
			h.passed[node.Name] = last
			return true
		}
	}
	h.passed[node.Name] = passedNode{node: node, current: node.ResourceVersion}
	return false
}

// currentVersion returns the resourceVersion at which the watch last saw
// the cache's node as it is: a heartbeat's, if one came after it.
func (h *heartbeats) currentVersion(cached *nodeview.Node) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if last, ok := h.passed[cached.Name]; ok && last.node == cached {
		return last.current
	}
	return cached.ResourceVersion
}

// forget forgets every node passed on, as a new list starts: a node
// deleted while no watch ran is not kept. Forgetting is always safe: the
// next update of each node is passed on.
func (h *heartbeats) forget() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.passed)
}
