package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Server is the simulated API server. Clients reach it through a Transport
// that answers reads at once and parks writes at its door; the simulation
// serves the parked writes in a fixed order, once every goroutine is
// blocked, so that the order goroutines were scheduled in does not decide
// what the store becomes. Faults are
// decided there too: a request refused, failed, or applied with its answer
// lost.
type Server struct {
	store *Store
	now   func() time.Time
	// Hooks hear of what the server does; set them before the first
	// request.
	Hooks Hooks

	// door guards parked and held; state guards the store and the watches.
	door, state sync.Mutex
	// parked are the requests waiting at the door.
	parked []*Call
	// knock is signalled when a request parks, to wake the simulation.
	knock chan struct{}

	watchers []*watcher
	// delayUntil holds the events of every watch, new ones too, until then;
	// what it holds dates from delayFrom on: when the delay began, or
	// earlier, when a watch that had gone blind before resumed during it.
	delayUntil, delayFrom time.Time
	// stallEnded is when a stalled watch last ended: its client watches
	// again and only then reads what the stall held back.
	stallEnded time.Time
	// watchedAlways are the resources every client watches for as long as
	// it runs.
	watchedAlways map[schema.GroupVersionResource]bool
	// rewatching are the ended watches (client and resource) whose client
	// has not watched their resource again yet: until it has, it sees that
	// resource as it was; rewatched is when the last one did, later than it
	// went blind.
	rewatching map[string]blindWatch
	rewatched  time.Time
	// forbidden are the resources a client may not touch: its role lacks them.
	forbidden map[schema.GroupVersionResource]bool
	// held are the clients whose requests wait: a network partition.
	held map[string]bool
}

// Hooks are how the rest of the simulation hears of the server: the
// checker judges what it hears, and the world decides the faults. A nil
// hook hears nothing.
type Hooks struct {
	// Changed hears of every change of the store, after the watches have
	// queued it: its type, the object as it now is (as it was, for a
	// deletion), and the object before (nil for a creation).
	Changed func(gvr schema.GroupVersionResource, typ watch.EventType, obj, old *unstructured.Unstructured)
	// Faults decides each request's fault; nil serves all.
	Faults func(c *Call) Fault
	// Writes hears of every write served, before its answer goes out.
	Writes func(c *Call, resp *http.Response)
	// Attempts hears of every request that reaches the server, before its
	// fault: what the client tried, whether or not it happened.
	Attempts func(c *Call)
	// Refused hears of every read a partition refuses: tried, though it
	// never reached the server.
	Refused func(c *Call)
	// LostAnswers hears of every write applied whose answer is lost.
	LostAnswers func(c *Call)
	// Admit is admission: an error refuses a write the role allows, as a
	// webhook does; nil admits every write.
	Admit func(c *Call) error
	// Shown hears of the objects a client's list or watch showed it;
	// listed says a list showed every object of the kind, which tells the
	// client of every delete before it too.
	Shown func(client string, gvr schema.GroupVersionResource, uids []types.UID, listed bool)
}

// New returns a server with an empty store, on the clock now.
// watchedAlways are the resources every client watches for as long as it
// runs: when a watch of one ends, its client sees that resource as it was
// until it watches again, and the server keeps track of that (Watches).
func New(now func() time.Time, watchedAlways ...schema.GroupVersionResource) *Server {
	s := &Server{store: newStore(now), now: now, knock: make(chan struct{}, 1), forbidden: map[schema.GroupVersionResource]bool{}, held: map[string]bool{},
		rewatching: map[string]blindWatch{}, watchedAlways: map[schema.GroupVersionResource]bool{}}
	for _, gvr := range watchedAlways {
		s.watchedAlways[gvr] = true
	}
	s.store.changed = func(gvr schema.GroupVersionResource, e event, old *unstructured.Unstructured) {
		s.queue(gvr, e)
		if s.Hooks.Changed != nil {
			s.Hooks.Changed(gvr, e.typ, e.obj, old)
		}
	}
	return s
}

// Store is the server's store, for the world's actors, which write to it
// as their own clients would, and for the checker, which reads the
// objects at the API server. Use it only with the state locked (Locked).
func (s *Server) Store() *Store { return s.store }

// Locked runs f with the server's state locked: the actors and the checker
// read and write the store, and the watches, only so.
func (s *Server) Locked(f func()) {
	s.state.Lock()
	defer s.state.Unlock()
	f()
}

// Settle serves the parked requests and delivers the watch events due,
// round after round, until every goroutine of the bubble waits for
// something that only time or the simulation's next step brings.
func (s *Server) Settle() {
	for {
		synctest.Wait()
		calls := s.take()
		if len(calls) == 0 && !s.pending() {
			return
		}
		// One batch under the lock: the clients woken by an answer wait
		// for the lock before they read, so that they all read what the
		// whole batch left, whatever order they wake in.
		s.Locked(func() {
			for _, c := range calls {
				s.answerLocked(c)
			}
			s.deliverLocked()
		})
	}
}

// Install serves a resource: its CRD is installed. The state is locked.
func (s *Server) Install(gvr schema.GroupVersionResource) {
	s.store.resources[gvr].Served = true
}

// Uninstall stops serving a resource, as deleting its CRD does: every
// object of it is deleted, its finalizers notwithstanding, the deletions
// are delivered, and then its watches end. The state is locked.
func (s *Server) Uninstall(gvr schema.GroupVersionResource) {
	for _, obj := range s.store.Objects(gvr) {
		obj.SetFinalizers(nil)
		_, _ = s.store.Update(gvr, obj, false)
		_, _ = s.store.Remove(gvr, obj.GetNamespace(), obj.GetName(), &metav1.DeleteOptions{})
	}
	s.deliverLocked()
	s.endWatchesLocked(func(w *watcher) bool { return w.gvr == gvr })
	s.store.resources[gvr].Served = false
}

// Knocks is signalled when a request waits to be served or a new watch's
// initial events wait for delivery: the simulation wakes to serve them at
// once, not at its next timer.
func (s *Server) Knocks() <-chan struct{} { return s.knock }

// DropClient answers a gone client's parked requests with errors, and ends
// its watches: a crashed process's requests in flight never land.
func (s *Server) DropClient(client string) {
	s.door.Lock()
	kept := s.parked[:0]
	var dropped []*Call
	for _, c := range s.parked {
		if c.Client == client {
			dropped = append(dropped, c)
		} else {
			kept = append(kept, c)
		}
	}
	s.parked = kept
	s.door.Unlock()
	for _, c := range dropped {
		c.answer <- answer{err: context.Canceled}
	}
	s.endWatches(func(w *watcher) bool { return w.client == client })
	s.state.Lock()
	defer s.state.Unlock()
	for key := range s.rewatching {
		if strings.HasPrefix(key, client+" ") {
			delete(s.rewatching, key)
		}
	}
}
