package apiserver

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The server's watches: changes queued for them, delivered when due,
// held back by a delay, stopped by a stall, and ended; and what an ended
// watch leaves its client unable to see until it watches again.

func (s *Server) deliverLocked() {
	now := s.now()
	kept := s.watchers[:0]
	for _, w := range s.watchers {
		switch {
		case w.stream.isClosed():
			continue
		case !w.ends.IsZero() && !now.Before(w.ends):
			s.showed(w.client, w.gvr, w.deliver(now), false)
			s.endLocked(w)
			continue
		}
		s.showed(w.client, w.gvr, w.deliver(now), false)
		kept = append(kept, w)
	}
	s.watchers = kept
}

func (s *Server) showed(client string, gvr schema.GroupVersionResource, uids []types.UID, listed bool) {
	if s.Hooks.Shown != nil && (len(uids) > 0 || listed) {
		s.Hooks.Shown(client, gvr, uids, listed)
	}
}

// NextDue is when the next held watch event falls due, or a watch times
// out; zero for none: the simulation sets its timer by it.
func (s *Server) NextDue() time.Time {
	s.state.Lock()
	defer s.state.Unlock()
	var next time.Time
	now := s.now()
	for _, w := range s.watchers {
		for _, t := range []time.Time{w.heldUntil, w.ends} {
			if t.After(now) && (next.IsZero() || t.Before(next)) && (t.Equal(w.ends) || len(w.pending) > 0) {
				next = t
			}
		}
	}
	return next
}

// pending tells whether watch events wait for delivery now, or a watch
// has timed out and must end.
func (s *Server) pending() bool {
	s.state.Lock()
	defer s.state.Unlock()
	now := s.now()
	for _, w := range s.watchers {
		if w.stream.isClosed() {
			continue
		}
		if len(w.pending) > 0 && !w.stalled && !now.Before(w.heldUntil) || !w.ends.IsZero() && !now.Before(w.ends) {
			return true
		}
	}
	return false
}

// queue queues a change for the watches of its kind.
func (s *Server) queue(gvr schema.GroupVersionResource, e event) {
	for _, w := range s.watchers {
		if w.gvr == gvr && w.matches(e.obj) {
			w.queue(e.typ, e.obj.Object)
		}
	}
}

// DelayWatches holds back the events of every watch, new ones too, until
// until: watches that deliver late. The state is locked.
func (s *Server) DelayWatches(until time.Time) {
	for _, w := range s.watchers {
		w.heldUntil = until
	}
	s.delayFrom, s.delayUntil = s.now(), until
}

// StallWatches stops the open watches of a resource (by its plural name)
// from sending, their connections open, until they end. The state is
// locked.
func (s *Server) StallWatches(resource string) {
	for _, w := range s.watchers {
		if w.gvr.Resource == resource && !w.stalled {
			w.stalled, w.stalledAt = true, s.now()
		}
	}
}

// EndWatches ends every watch; the reflectors watch again from their last
// resourceVersion. The state is locked.
func (s *Server) EndWatches() {
	s.endWatchesLocked(func(*watcher) bool { return true })
}

// EndStalledWatches ends the stalled watches, which are then watched
// again. The state is locked.
func (s *Server) EndStalledWatches() {
	s.endWatchesLocked(func(w *watcher) bool { return w.stalled })
}

// WatchHealth is how far the watches let their clients see the store now:
// what the world asks to tell whether the cluster is calm, and the checker
// to tell how late a client may see it.
type WatchHealth struct {
	// Stalled is true while a watch is stalled.
	Stalled bool
	// StallEnded is when a stalled watch last ended.
	StallEnded time.Time
	// Rewatching is true while a client has not watched again a resource
	// whose watch ended: it sees that resource as it was.
	Rewatching bool
	// Rewatched is when a client last watched such a resource again, later
	// than it went blind.
	Rewatched time.Time
	// DelayUntil holds back the events of every watch until then; the
	// events it holds date from DelayFrom on.
	DelayFrom, DelayUntil time.Time
}

// Watches tells the watches' health now. The state is locked.
func (s *Server) Watches() WatchHealth {
	h := WatchHealth{StallEnded: s.stallEnded, Rewatched: s.rewatched, DelayFrom: s.delayFrom, DelayUntil: s.delayUntil}
	for _, b := range s.rewatching {
		if b.until.IsZero() || s.now().Before(b.until) {
			h.Rewatching = true
		}
	}
	for _, w := range s.watchers {
		if w.stalled {
			h.Stalled = true
		}
	}
	return h
}

// endWatches closes the watches of clients or kinds; the reflectors watch
// again from their last resourceVersion.
func (s *Server) endWatches(match func(w *watcher) bool) {
	s.state.Lock()
	defer s.state.Unlock()
	s.endWatchesLocked(match)
}

func (s *Server) endWatchesLocked(match func(w *watcher) bool) {
	for _, w := range s.watchers {
		if match(w) {
			s.endLocked(w)
		}
	}
}

func rewatchKey(client string, gvr schema.GroupVersionResource) string {
	return client + " " + gvr.String()
}

// blindWatch is a watch that ended, whose client has not watched its
// resource again: went is when it went blind (it ended, or stalled
// before); until, when not zero, is when the client is taken to have
// stopped watching the resource.
type blindWatch struct {
	went, until time.Time
}

// kindRewatchBound is how long a client may take to watch a resource it
// does not always watch (a remediation kind) again: its reflector backs
// off up to 30 s between lists, and faults (429, an outage) add theirs.
// One that has not by then is taken to have stopped its informer (its kind
// went, or may not be read).
const kindRewatchBound = 2 * time.Minute

// endLocked ends a watch, noting when a stalled one ended, and that its
// client has yet to watch its resource again: until it has, what changed
// since is unseen, whatever ended the watch: a fault, a stall or its
// timeout (a node watch that times out during an outage relists only after
// it, and until then a lease may be renewed from the picture before; a
// remediation kind's watch broken during a 429 fault relists after its
// back-off, and until then a lease may be renewed for a step whose
// resource its remediator deleted). A resource every replica watches for
// as long as it runs (watchedAlways: nodes, NodeHealthChecks, leases) is
// watched again for certain; another, within kindRewatchBound, unless its
// informer stopped.
func (s *Server) endLocked(w *watcher) {
	if w.stream.isClosed() {
		return
	}
	blind := blindWatch{went: s.now()}
	if w.stalled {
		s.stallEnded, blind.went = s.now(), w.stalledAt
	}
	if !s.watchedAlways[w.gvr] {
		blind.until = s.now().Add(kindRewatchBound)
	}
	s.rewatching[rewatchKey(w.client, w.gvr)] = blind
	_ = w.stream.Close()
}
