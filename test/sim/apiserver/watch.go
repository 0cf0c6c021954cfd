package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one open watch. Its events wait in pending until the
// simulation delivers them: at once, after a delay, or, while it is stalled,
// not at all (a watch that stops sending while its connection stays open).
type watcher struct {
	client    string
	gvr       schema.GroupVersionResource
	namespace string
	selector  labels.Selector
	stream    *stream
	pending   []frame
	// heldUntil delays delivery; stalled stops it until the watch ends,
	// since stalledAt.
	heldUntil time.Time
	stalled   bool
	stalledAt time.Time
	// ends is when the watch times out (its timeoutSeconds).
	ends time.Time
}

func (w *watcher) matches(obj *unstructured.Unstructured) bool {
	return (w.namespace == "" || obj.GetNamespace() == w.namespace) && w.selector.Matches(labels.Set(obj.GetLabels()))
}

// frame is one event as the watch writes it, with the UID of the object
// it shows to its client: an added or modified one.
type frame struct {
	bytes []byte
	shows types.UID
}

func (w *watcher) queue(typ watch.EventType, obj any) {
	raw, _ := json.Marshal(obj)
	bytes, _ := json.Marshal(metav1.WatchEvent{Type: string(typ), Object: runtimeRaw(raw)})
	f := frame{bytes: append(bytes, '\n')}
	if object, ok := obj.(map[string]any); ok && (typ == watch.Added || typ == watch.Modified) {
		f.shows = (&unstructured.Unstructured{Object: object}).GetUID()
	}
	w.pending = append(w.pending, f)
}

// deliver writes the pending events to the stream unless held, and
// returns the UIDs of the objects they show.
func (w *watcher) deliver(now time.Time) (shown []types.UID) {
	if w.stalled || now.Before(w.heldUntil) {
		return nil
	}
	return w.flush()
}

// flush writes the pending events to the stream, held or not, and returns
// the UIDs of the objects they show.
func (w *watcher) flush() (shown []types.UID) {
	for _, f := range w.pending {
		w.stream.write(f.bytes)
		if f.shows != "" {
			shown = append(shown, f.shows)
		}
	}
	w.pending = nil
	return shown
}

// stream is a watch response's body: what the server writes, the client
// reads, and either side may end it. Its reads block on a channel, so that
// the simulation's goroutines are durably blocked while they wait.
type stream struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
	// wake is signalled after every write and at close.
	wake chan struct{}
	// done ends reads when the request's context ends.
	done <-chan struct{}
}

func newStream(done <-chan struct{}) *stream {
	return &stream{wake: make(chan struct{}, 1), done: done}
}

func (s *stream) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.buf.Write(p)
	s.signal()
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		if s.buf.Len() > 0 {
			n, _ := s.buf.Read(p)
			s.mu.Unlock()
			return n, nil
		}
		if s.closed {
			s.mu.Unlock()
			return 0, io.EOF
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.done:
			return 0, io.ErrUnexpectedEOF
		}
	}
}

// Close ends the stream, from either side; what was written and not read
// yet is still read.
func (s *stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.signal()
	return nil
}

func (s *stream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
