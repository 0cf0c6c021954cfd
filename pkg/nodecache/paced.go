package nodecache

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// readPacing makes a connection's reader, once it has emptied the socket,
// wait window before it reads again, so that the node updates arriving
// meanwhile are read, decoded and handled in one wake-up of the process
// instead of one each: below a few hundred updates a second, waking up
// (the Go scheduler, its sysmon thread, epoll) costs more than the update.
// A read that fills its buffer leaves more to read at once, and a read that
// finds the socket empty waits for data as usual: an update is seen at
// most window later, and only while updates arrive faster than one per
// window. Meanwhile, what arrives does not wake the process either
// (lowwater.go).
//
// Only a watch of changes is paced, never a list: neither the initial list
// nor the relist after a 410 Gone or a watch error, whether a LIST or a
// watch that streams the initial list first (sendInitialEvents). Such a
// watch is paced from the bookmark that ends its initial events on: client-go
// goes on reading changes from it until it times out, 5 to 10 minutes, and
// unpaced that long, a heartbeat costs twice the CPU. Paced
// reads keep up with a steady 12 MiB/s at a 300ms window, far more than a
// watch of changes needs, but fall behind 3 MiB/s at 1s; a relist needs
// hundreds of MiB/s.
type readPacing struct {
	window time.Duration
	// attention tells from when updates must be read as they arrive.
	attention attention
	clock     clock.Clock
	// initial is the connection of the watch that streams the initial
	// list, until its initial events end.
	initial atomic.Pointer[pacedConn]
}

// active tells whether to pace a watch's reads now: not when a create may
// be due before a window would end.
func (p *readPacing) active() bool {
	return !p.attention.dueBy(p.clock.Now().Add(p.window))
}

// pacedRequest tells whether a request's response may be read paced from
// its start: a watch of changes, not a list; initialList tells whether it
// is a watch that streams the initial list first, paced once it has.
func pacedRequest(req *http.Request) (paced, initialList bool) {
	query := req.URL.Query()
	watch, initial := query.Get("watch") == "true", query.Get("sendInitialEvents") == "true"
	return watch && !initial, watch && initial
}

// initialEventsEnded paces the watch that streamed the initial list from
// now on: what follows are changes. The decoder calls it on the bookmark
// that ends the initial events.
func (p *readPacing) initialEventsEnded() {
	if c := p.initial.Swap(nil); c != nil {
		c.watch.Store(true)
	}
}

// wrap marks the connection each request goes out on with whether its
// response may be read paced: an HTTP/1.1 connection carries one request at
// a time, a list after a watch or the other way round.
func (p *readPacing) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		paced, initialList := pacedRequest(req)
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if c := pacedConnOf(info.Conn); c != nil {
				c.watch.Store(paced)
				if initialList {
					p.initial.Store(c)
				} else {
					p.initial.CompareAndSwap(c, nil)
				}
			}
		}}
		return rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// pacedConnOf is the paced connection under a connection, or nil.
func pacedConnOf(conn net.Conn) *pacedConn {
	if tlsConn, ok := conn.(*tls.Conn); ok {
		conn = tlsConn.NetConn()
	}
	c, _ := conn.(*pacedConn)
	return c
}

// dialer returns a dial function whose connections are paced.
func (p *readPacing) dialer() func(ctx context.Context, network, address string) (net.Conn, error) {
	dialer := nodeDialer()
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: conn, pacing: p, lowWater: tcpLowWater(conn)}, nil
	}
}

// pacedReadSize is how much one read of a paced connection takes from the
// socket: a window's updates at hundreds a second (7 KB each) in one
// system call, where TLS, reading a record at a time, made one for every
// 16 KB.
const pacedReadSize = 256 << 10

// pacedConn is a connection whose reads are paced.
type pacedConn struct {
	net.Conn
	pacing *readPacing
	// watch is true while the connection carries a watch of changes
	// (pacedRequest), whose reads may be paced.
	watch atomic.Bool
	// readAt is when the next read may start; zero is now. The reads of
	// one connection never overlap: its TLS layer serializes them.
	readAt time.Time
	// buffer holds what the last read from the socket took, unread, in
	// buffer[next:]; it is allocated at the first paced read.
	buffer []byte
	next   int
	// lowWater sets the socket's receive low-water mark, raised while the
	// reader waits out a window (lowwater.go); nil where there is none.
	lowWater lowWaterSetter
}

func (c *pacedConn) Read(b []byte) (int, error) {
	if c.next < len(c.buffer) {
		return c.readBuffered(b), nil
	}
	if !c.readAt.IsZero() {
		if wait := c.readAt.Sub(c.pacing.clock.Now()); wait > 0 {
			c.pacing.clock.Sleep(wait)
		}
		c.readAt = time.Time{}
		if err := c.unmuteArrivals(); err != nil {
			return 0, err
		}
	}
	if !c.watch.Load() || !c.pacing.active() {
		return c.Conn.Read(b)
	}
	if c.buffer == nil {
		c.buffer = make([]byte, 0, pacedReadSize)
	}
	n, err := c.Conn.Read(c.buffer[:cap(c.buffer)])
	c.buffer, c.next = c.buffer[:n], 0
	if n > 0 && n < cap(c.buffer) {
		// The socket is empty: what arrives next is read a window later.
		c.readAt = c.pacing.clock.Now().Add(c.pacing.window)
		c.muteArrivals()
	}
	n = c.readBuffered(b)
	if c.next < len(c.buffer) {
		// The rest is read first; an error comes again after it.
		return n, nil
	}
	return n, err
}

// readBuffered reads what the last read from the socket left.
func (c *pacedConn) readBuffered(b []byte) int {
	n := copy(b, c.buffer[c.next:])
	c.next += n
	return n
}
