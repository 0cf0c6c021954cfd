package apiserver

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The server's door: requests arrive through a client's Transport, reads
// are answered at once, writes park until the simulation serves them, and
// each is answered with its fault.

// Call is one request that reached the server: who sent it, what it asks,
// and when it arrived. The hooks hear of calls, so that the checker can
// judge a write by the cluster as it was when it arrived.
type Call struct {
	Request
	// Client is the name of the client that sent it: a controller replica.
	Client string
	// HTTP is the request as the client sent it.
	HTTP *http.Request
	// Arrived is when it reached the door.
	Arrived time.Time
	answer  chan answer
}

type answer struct {
	resp *http.Response
	err  error
}

// Fault is what goes wrong with one request: a history's steps open fault
// windows, and the Faults hook decides each request's.
type Fault int

const (
	// FaultNone serves the request.
	FaultNone Fault = iota
	// FaultUnavailable refuses the connection: nothing happened.
	FaultUnavailable
	// FaultThrottled is a 429: nothing happened.
	FaultThrottled
	// FaultInternal is a 500: nothing happened, the client cannot know.
	FaultInternal
	// FaultLostAnswer applies the request and loses its answer: a timeout.
	FaultLostAnswer
)

// String names a fault as a printed history shows it.
func (f Fault) String() string {
	return faultNames[f]
}

var faultNames = map[Fault]string{FaultNone: "none", FaultUnavailable: "unavailable", FaultThrottled: "429", FaultInternal: "500", FaultLostAnswer: "lost-answer"}

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
		c := &Call{Client: client, HTTP: req, Request: parse(req, body), Arrived: s.now(), answer: make(chan answer, 1)}
		if !c.IsWrite() {
			if s.isHeld(client) {
				if s.Hooks.Refused != nil {
					s.state.Lock()
					s.Hooks.Refused(c)
					s.state.Unlock()
				}
				return nil, errUnavailable
			}
			// Served at once: a read may be made with a lock held (the
			// discovery REST mapper holds one), and a goroutine waiting
			// for that lock would keep the bubble from ever settling.
			s.state.Lock()
			s.answerLocked(c)
			s.state.Unlock()
			if c.Verb == "watch" {
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
func (s *Server) take() []*Call {
	s.door.Lock()
	var parked, kept []*Call
	for _, c := range s.parked {
		if s.held[c.Client] {
			kept = append(kept, c)
		} else {
			parked = append(parked, c)
		}
	}
	s.parked = kept
	s.door.Unlock()
	slices.SortStableFunc(parked, func(a, b *Call) int {
		return cmp.Or(strings.Compare(a.Client, b.Client), strings.Compare(a.HTTP.URL.String(), b.HTTP.URL.String()),
			strings.Compare(a.HTTP.Method, b.HTTP.Method), bytes.Compare(a.Body, b.Body))
	})
	return parked
}

// Hold parks a client's requests until it is released, and refuses its
// reads: a network partition between the client and the server.
func (s *Server) Hold(client string, on bool) {
	s.door.Lock()
	defer s.door.Unlock()
	s.held[client] = on
}

func (s *Server) isHeld(client string) bool {
	s.door.Lock()
	defer s.door.Unlock()
	return s.held[client]
}

// Forbid takes a resource from the clients' role, or gives it back: every
// request for it but discovery is answered 403 Forbidden. The state is
// locked.
func (s *Server) Forbid(gvr schema.GroupVersionResource, on bool) {
	s.forbidden[gvr] = on
}

// Forbidden tells whether the clients' role lacks a resource. The state is
// locked.
func (s *Server) Forbidden(gvr schema.GroupVersionResource) bool {
	return s.forbidden[gvr]
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
func (s *Server) answerLocked(c *Call) {
	if err := c.HTTP.Context().Err(); err != nil {
		// The client gave up before the request reached the server: a
		// write whose deadline passed never lands.
		c.answer <- answer{err: err}
		return
	}
	if s.Hooks.Attempts != nil {
		s.Hooks.Attempts(c)
	}
	f := FaultNone
	if s.Hooks.Faults != nil {
		f = s.Hooks.Faults(c)
	}
	switch f {
	case FaultUnavailable:
		c.answer <- answer{err: errUnavailable}
		return
	case FaultThrottled:
		c.answer <- answer{resp: respondError(apierrors.NewTooManyRequests("the server is throttled", 1))}
		return
	case FaultInternal:
		c.answer <- answer{resp: respondError(apierrors.NewInternalError(errors.New("etcdserver: request timed out")))}
		return
	}
	var resp *http.Response
	var refused error
	if s.Hooks.Admit != nil && c.IsWrite() {
		refused = s.Hooks.Admit(c)
	}
	switch {
	case s.forbidden[c.GVR] && c.Verb != "discovery":
		resp = respondError(apierrors.NewForbidden(c.GVR.GroupResource(), c.Name, errors.New("the controller's role does not grant "+c.Verb)))
	case refused != nil:
		resp = respondError(refused)
	default:
		resp = s.serve(c.Client, c.HTTP, c.Request)
	}
	if c.IsWrite() && s.Hooks.Writes != nil {
		s.Hooks.Writes(c, resp)
	}
	if f == FaultLostAnswer {
		if s.Hooks.LostAnswers != nil {
			s.Hooks.LostAnswers(c)
		}
		if resp.Body != nil && c.Verb == "watch" {
			_ = resp.Body.Close()
		}
		c.answer <- answer{resp: respondError(apierrors.NewTimeoutError("the request's answer was lost", 0))}
		return
	}
	c.answer <- answer{resp: resp}
}
