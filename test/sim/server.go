package sim

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Server is the simulated API server. Clients reach it through a Transport
// that answers reads at once and parks writes at its door; the simulation
// serves the parked writes in a fixed order, once every goroutine is
// blocked, so that the order goroutines were scheduled in does not decide
// what the store becomes. Faults are
// decided there too: a request refused, failed, or applied with its answer
// lost.
type Server struct {
	store *store
	now   func() time.Time

	// door guards parked and held; state guards the store and the watches.
	door, state sync.Mutex
	// parked are the requests waiting at the door.
	parked []*call
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
	// rewatching are the ended watches of resources every replica watches
	// (client and resource, with when each went blind: it ended, or stalled
	// before) whose client has not watched their resource again yet: until
	// it has, it sees that resource as it was; rewatched is when the last
	// one did, later than it went blind.
	rewatching map[string]time.Time
	rewatched  time.Time
	// faults decides each request's fault; nil serves all.
	faults func(c *call) fault
	// forbidden are the resources a client may not touch: its role lacks them.
	forbidden map[schema.GroupVersionResource]bool
	// held are the clients whose requests wait: a network partition.
	held map[string]bool
	// writes hears of every write served, before its answer goes out.
	writes func(c *call, resp *http.Response)
	// attempts hears of every request that reaches the server, before its
	// fault: what the client tried, whether or not it happened.
	attempts func(c *call)
	// lostAnswers hears of every write applied whose answer is lost.
	lostAnswers func(c *call)
	// shown hears of the objects a client's list or watch showed it.
	shown func(client string, gvr schema.GroupVersionResource, uids []types.UID)
}

// call is one request parked at the door.
type call struct {
	client string
	req    *http.Request
	r      request
	// arrived is when it reached the door.
	arrived time.Time
	answer  chan answer
}

type answer struct {
	resp *http.Response
	err  error
}

// fault is what goes wrong with one request.
type fault int

const (
	faultNone fault = iota
	// faultUnavailable refuses the connection: nothing happened.
	faultUnavailable
	// faultThrottled is a 429: nothing happened.
	faultThrottled
	// faultInternal is a 500: nothing happened, the client cannot know.
	faultInternal
	// faultLostAnswer applies the request and loses its answer: a timeout.
	faultLostAnswer
)

func newServer(now func() time.Time) *Server {
	return &Server{store: newStore(now), now: now, knock: make(chan struct{}, 1), forbidden: map[schema.GroupVersionResource]bool{}, held: map[string]bool{}, rewatching: map[string]time.Time{}}
}

// Transport returns the round tripper of one client: a controller
// replica. A read is answered at once, from the store as the last write
// left it; a write parks at the door until the simulation serves it. Its
// requests end when the client's context does, parked or not.
func (s *Server) Transport(client string) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var body []byte
		if req.Body != nil {
			body, _ = io.ReadAll(req.Body)
			_ = req.Body.Close()
		}
		c := &call{client: client, req: req, r: parse(req, body), arrived: s.now(), answer: make(chan answer, 1)}
		if !c.r.isWrite() {
			if s.isHeld(client) {
				return nil, errUnavailable
			}
			// Served at once: a read may be made with a lock held (the
			// discovery REST mapper holds one), and a goroutine waiting
			// for that lock would keep the bubble from ever settling.
			s.state.Lock()
			s.answerLocked(c)
			s.state.Unlock()
			if c.r.verb == "watch" {
				// Its initial events wait for delivery: wake the
				// simulation, as a parked write does.
				s.wake()
			}
			a := <-c.answer
			return a.resp, a.err
		}
		s.door.Lock()
		s.parked = append(s.parked, c)
		s.door.Unlock()
		s.wake()
		select {
		case a := <-c.answer:
			return a.resp, a.err
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// take returns the parked requests in a fixed order: by client, path,
// method and body, so that the order of goroutines does not matter.
func (s *Server) take() []*call {
	s.door.Lock()
	var parked, kept []*call
	for _, c := range s.parked {
		if s.held[c.client] {
			kept = append(kept, c)
		} else {
			parked = append(parked, c)
		}
	}
	s.parked = kept
	s.door.Unlock()
	slices.SortStableFunc(parked, func(a, b *call) int {
		return cmp.Or(strings.Compare(a.client, b.client), strings.Compare(a.req.URL.String(), b.req.URL.String()),
			strings.Compare(a.req.Method, b.req.Method), bytes.Compare(a.r.body, b.r.body))
	})
	return parked
}

// hold parks a client's requests until it is released.
func (s *Server) hold(client string, on bool) {
	s.door.Lock()
	defer s.door.Unlock()
	s.held[client] = on
}

func (s *Server) isHeld(client string) bool {
	s.door.Lock()
	defer s.door.Unlock()
	return s.held[client]
}

// wake knocks: the simulation serves what waits at once, not at its next
// timer.
func (s *Server) wake() {
	select {
	case s.knock <- struct{}{}:
	default:
	}
}

// errUnavailable is a refused connection.
var errUnavailable = errors.New("dial tcp: connect: connection refused")

// answerLocked serves one request, with its fault; the state is locked.
func (s *Server) answerLocked(c *call) {
	if err := c.req.Context().Err(); err != nil {
		// The client gave up before the request reached the server: a
		// write whose deadline passed never lands.
		c.answer <- answer{err: err}
		return
	}
	if s.attempts != nil {
		s.attempts(c)
	}
	f := faultNone
	if s.faults != nil {
		f = s.faults(c)
	}
	switch f {
	case faultUnavailable:
		c.answer <- answer{err: errUnavailable}
		return
	case faultThrottled:
		c.answer <- answer{resp: respondError(apierrors.NewTooManyRequests("the server is throttled", 1))}
		return
	case faultInternal:
		c.answer <- answer{resp: respondError(apierrors.NewInternalError(errors.New("etcdserver: request timed out")))}
		return
	}
	var resp *http.Response
	if s.forbidden[c.r.gvr] && c.r.verb != "discovery" {
		resp = respondError(apierrors.NewForbidden(c.r.gvr.GroupResource(), c.r.name, errors.New("the controller's role does not grant "+c.r.verb)))
	} else {
		resp = s.serve(c.client, c.req, c.r)
	}
	if c.r.isWrite() && s.writes != nil {
		s.writes(c, resp)
	}
	if f == faultLostAnswer {
		if s.lostAnswers != nil {
			s.lostAnswers(c)
		}
		if resp.Body != nil && c.r.verb == "watch" {
			_ = resp.Body.Close()
		}
		c.answer <- answer{resp: respondError(apierrors.NewTimeoutError("the request's answer was lost", 0))}
		return
	}
	c.answer <- answer{resp: resp}
}

// deliver writes the watch events that are due, and ends the watches that
// timed out or whose client went away.
func (s *Server) deliver() {
	s.state.Lock()
	defer s.state.Unlock()
	s.deliverLocked()
}

func (s *Server) deliverLocked() {
	now := s.now()
	kept := s.watchers[:0]
	for _, w := range s.watchers {
		switch {
		case w.stream.isClosed():
			continue
		case !w.ends.IsZero() && !now.Before(w.ends):
			s.showed(w.client, w.gvr, w.deliver(now))
			s.endLocked(w)
			continue
		}
		s.showed(w.client, w.gvr, w.deliver(now))
		kept = append(kept, w)
	}
	s.watchers = kept
}

func (s *Server) showed(client string, gvr schema.GroupVersionResource, uids []types.UID) {
	if s.shown != nil && len(uids) > 0 {
		s.shown(client, gvr, uids)
	}
}

// nextDue is when the next held watch event falls due, or a watch times
// out; zero for none.
func (s *Server) nextDue() time.Time {
	s.state.Lock()
	defer s.state.Unlock()
	var next time.Time
	now := s.now()
	for _, w := range s.watchers {
		for _, t := range []time.Time{w.heldUntil, w.ends} {
			if t.After(now) && (next.IsZero() || t.Before(next)) && (t == w.ends || len(w.pending) > 0) {
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

// changed queues a change for the watches of its kind.
func (s *Server) changed(gvr schema.GroupVersionResource, e event) {
	for _, w := range s.watchers {
		if w.gvr == gvr && w.matches(e.obj) {
			w.queue(e.typ, e.obj.Object)
		}
	}
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

// endLocked ends a watch, noting when a stalled one ended, and, for a
// resource every replica watches for as long as it runs (nodes,
// NodeHealthChecks, leases), that its client has yet to watch again:
// until it has, what changed since is unseen, whatever ended the watch: a
// fault, a stall or its timeout (a node watch that times out during an
// outage relists only after it, and until then a lease may be renewed
// from the picture before).
func (s *Server) endLocked(w *watcher) {
	if w.stream.isClosed() {
		return
	}
	blind := s.now()
	if w.stalled {
		s.stallEnded, blind = s.now(), w.stalledAt
	}
	if w.gvr == nodesGVR || w.gvr == nhcGVR || w.gvr == leasesGVR {
		s.rewatching[rewatchKey(w.client, w.gvr)] = blind
	}
	_ = w.stream.Close()
}

// dropClient answers a gone client's parked requests with errors, and ends
// its watches.
func (s *Server) dropClient(client string) {
	s.door.Lock()
	kept := s.parked[:0]
	var dropped []*call
	for _, c := range s.parked {
		if c.client == client {
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
