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
	r := reader{b: data}
	for r.next() {
		if r.typ != protowire.BytesType {
			continue
		}
		switch r.num {
		case watchEventType:
			event.Type = eventType(r.val)
		case watchEventObject:
			object := reader{b: r.val}
			for object.next() {
				if object.num == rawExtensionRaw && object.typ == protowire.BytesType {
					event.Object.Raw = object.val
				}
			}
			if object.err != nil {
				return nil, nil, object.err
			}
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	w.decodeAhead(event)
	return event, nil, nil
}

// decodeAhead decodes the node of an added, modified or deleted node's
// event, and makes a heartbeat's event a bookmark. A node it cannot decode
// is left to the object decoder, and passed on.
func (w *watchEvents) decodeAhead(event *metav1.WatchEvent) {
	if w.heartbeats == nil || len(event.Object.Raw) == 0 {
		return
	}
	switch watch.EventType(event.Type) {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return
	}
	obj, _, err := w.objects.decodeFast(event.Object.Raw)
	node, ok := obj.(*nodeview.Node)
	if err != nil || !ok {
		return
	}
	if w.heartbeats.observe(watch.EventType(event.Type), node) {
		event.Type = string(watch.Bookmark)
	}
	w.objects.ahead.put(event.Object.Raw, node)
}

// decodedAhead hands the node a watch decoded with its event to the object
// decoder, which the watch calls next with the same bytes. Two watches may
// overlap for a moment as one stops: a node is only ever taken for the
// bytes it was decoded from.
type decodedAhead struct {
	mu   sync.Mutex
	raw  *byte
	node *nodeview.Node
}

func (a *decodedAhead) put(raw []byte, node *nodeview.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.raw, a.node = &raw[0], node
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
