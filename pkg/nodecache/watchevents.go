package nodecache

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// watchEvents decodes the frames of a protobuf watch into WatchEvents whose
// object is the frame's bytes, not a copy: the watch decodes the object
// before it reads the next frame, and every decoder copies what it keeps.
//
// With heartbeats, it decodes an event's node with the event, so as to
// pass a heartbeat on as a bookmark, and leaves the node with objects,
// which the watch asks for it next.
type watchEvents struct {
	runtime.Serializer
	objects    *compacting
	heartbeats *heartbeats
}

func (w *watchEvents) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return w.Serializer.Decode(data, defaults, into)
	}
	typ, raw, err := splitEvent(data)
	if err != nil {
		return nil, nil, err
	}
	event.Type, event.Object.Raw = typ, raw
	w.decodeAhead(event)
	return event, nil, nil
}

// splitEvent reads a protobuf WatchEvent's type and its object's bytes,
// which stay the event's.
func splitEvent(data []byte) (typ string, raw []byte, err error) {
	r := reader{b: data}
	for r.next() {
		if r.typ != protowire.BytesType {
			continue
		}
		switch r.num {
		case watchEventType:
			typ = eventType(r.val)
		case watchEventObject:
			object := reader{b: r.val}
			for object.next() {
				if object.num == rawExtensionRaw && object.typ == protowire.BytesType {
					raw = object.val
				}
			}
			if object.err != nil {
				return "", nil, object.err
			}
		}
	}
	return typ, raw, r.err
}

// decodeAhead decodes the node of an added, modified or deleted node's
// event, and makes a heartbeat's event a bookmark. A node it cannot decode
// is left to the object decoder, and passed on. The watch's frame reader
// may have decided it already (heartbeatFrames).
func (w *watchEvents) decodeAhead(event *metav1.WatchEvent) {
	if w.heartbeats == nil || len(event.Object.Raw) == 0 {
		return
	}
	switch watch.EventType(event.Type) {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return
	}
	if heartbeat, ok := w.objects.ahead.decided(event.Object.Raw); ok {
		if heartbeat {
			event.Type = string(watch.Bookmark)
		}
		return
	}
	obj, _, err := w.objects.decodeFast(event.Object.Raw)
	node, ok := obj.(*nodeview.Node)
	if err != nil || !ok {
		return
	}
	heartbeat := w.heartbeats.observe(watch.EventType(event.Type), node)
	if heartbeat {
		event.Type = string(watch.Bookmark)
	}
	w.objects.ahead.put(event.Object.Raw, node, heartbeat)
}

// decodedAhead hands the node a watch decoded with its event to the object
// decoder, which the watch calls next with the same bytes. Two watches may
// overlap for a moment as one stops: a node is only ever taken for the
// bytes it was decoded from.
type decodedAhead struct {
	mu   sync.Mutex
	raw  *byte
	node *nodeview.Node
	// heartbeat tells that the node's update is a heartbeat.
	heartbeat bool
}

func (a *decodedAhead) put(raw []byte, node *nodeview.Node, heartbeat bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.raw, a.node, a.heartbeat = &raw[0], node, heartbeat
}

// decided tells whether a node was decoded from these very bytes, and
// whether its update is a heartbeat.
func (a *decodedAhead) decided(raw []byte) (heartbeat, ok bool) {
	if len(raw) == 0 {
		return false, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heartbeat, a.node != nil && a.raw == &raw[0]
}

// take returns the node decoded from these very bytes, or nil.
func (a *decodedAhead) take(raw []byte) *nodeview.Node {
	if a == nil || len(raw) == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.node == nil || a.raw != &raw[0] {
		return nil
	}
	node := a.node
	a.raw, a.node = nil, nil
	return node
}

// eventType returns the watch event type of the bytes, without allocating
// for the known ones.
func eventType(b []byte) string {
	switch string(b) {
	case string(watch.Added):
		return string(watch.Added)
	case string(watch.Modified):
		return string(watch.Modified)
	case string(watch.Deleted):
		return string(watch.Deleted)
	case string(watch.Bookmark):
		return string(watch.Bookmark)
	}
	return string(b)
}
