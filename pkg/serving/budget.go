package serving

import (
	"container/list"
	"net"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// connCost is what an open connection costs the process before it sends
// a byte: its goroutine's stack, net/http's read and write buffers, the
// connection's own state (about 13 KiB measured for a silent one), and
// under TLS the handshake's.
const connCost = 16 << 10

// readGrace is how long a connection's first read may wait for its request
// before the connection may be closed to make room: a kubelet probe's
// request is there when the connection is first read.
const readGrace = 10 * time.Millisecond

// portBudget bounds what a port's callers make the process hold: every open
// connection is counted at connCost and the most its unfinished request may
// hold, perRequest (TLS handshake and headers), so that what it sends never
// takes the port over its limit. A connection whose request sends more is
// not read on until its read-header timeout ends it, so that it waits
// instead of coming back at once.
//
// When the port has no room for a new connection, it closes the one that
// has waited longest for its request since it was first read, once that is
// over readGrace: silent, unfinished (headers, a TLS handshake) or idle.
// Only when no other is left, read or not, does it close one whose last
// request was authorized (Prometheus between scrapes), the oldest. A connection
// not read yet, or read within readGrace, is never closed: while only
// those fill the port, no other is accepted, and new ones wait in the
// kernel's backlog, not in the process. A kubelet probe sends its whole
// request as it connects, which its first read finds and hands to its
// handler, so it is never closed, however fast others come; a TLS
// handshake ends within the grace.
type portBudget struct {
	limit, perRequest int64
	clock             clock.PassiveClock

	mu    sync.Mutex
	total int64
	// The lines of connections with no request in a handler, each oldest
	// first: fresh, not read yet; reading, read; trusted, whose last
	// request was authorized.
	fresh, reading, trusted list.List
	// room is signalled when a connection was read, handled or closed: an
	// admit that waits for room may find some.
	room chan struct{}
	// lot holds the connections closed to make room until their deadline.
	lot *parkingLot
}

func newPortBudget(limit, perRequest int64, clk clock.PassiveClock) *portBudget {
	return &portBudget{limit: limit, perRequest: perRequest, clock: clk, room: make(chan struct{}, 1), lot: newParkingLot()}
}

// perConn is what each connection is counted at.
func (b *portBudget) perConn() int64 { return connCost + b.perRequest }

// admit counts a new connection, closing the longest waiting to make room,
// or waiting for room while none may be closed; false when stop ends first.
func (b *portBudget) admit(conn net.Conn, stop <-chan struct{}) (*budgetedConn, bool) {
	c := &budgetedConn{Conn: conn, budget: b, done: make(chan struct{}), evicted: make(chan struct{}), deadlineSet: make(chan struct{})}
	for {
		b.mu.Lock()
		victims := b.makeRoomLocked()
		admitted := b.total+b.perConn() <= b.limit
		if admitted {
			b.total += b.perConn()
			b.lineUpLocked(c, &b.fresh)
		}
		b.mu.Unlock()
		for _, v := range victims {
			v.evict()
		}
		if admitted {
			return c, true
		}
		select {
		case <-b.room:
		case <-time.After(readGrace):
		case <-stop:
			return nil, false
		}
	}
}

// makeRoomLocked closes, in the books, the connections waiting longest
// until there is room for one more, or none may be closed, and returns
// them to evict.
func (b *portBudget) makeRoomLocked() []*budgetedConn {
	var victims []*budgetedConn
	for b.total+b.perConn() > b.limit {
		c := b.longestWaitingLocked()
		if c == nil {
			break
		}
		b.forgetLocked(c)
		victims = append(victims, c)
	}
	return victims
}

// longestWaitingLocked is the connection to close first, nil when none
// may be yet.
func (b *portBudget) longestWaitingLocked() *budgetedConn {
	if e := b.reading.Front(); e != nil {
		if c := e.Value.(*budgetedConn); b.clock.Since(c.firstRead) >= readGrace {
			return c
		}
		return nil
	}
	if b.fresh.Len() > 0 {
		// They will be read, and may go before an authorized one.
		return nil
	}
	if e := b.trusted.Front(); e != nil {
		return e.Value.(*budgetedConn)
	}
	return nil
}

// lineUpLocked puts c at the end of a line.
func (b *portBudget) lineUpLocked(c *budgetedConn, line *list.List) {
	if c.element != nil {
		c.line.Remove(c.element)
	}
	c.line, c.element = line, line.PushBack(c)
}

// leaveLineLocked takes c out of its line.
func (b *portBudget) leaveLineLocked(c *budgetedConn) {
	if c.element != nil {
		c.line.Remove(c.element)
		c.line, c.element = nil, nil
	}
}

// readingStarts hears of a read of c's unfinished request: the first puts
// it in the reading line, unless it is trusted.
func (b *portBudget) readingStarts(c *budgetedConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.closed || c.read || c.inHandler {
		// net/http reads on while a handler runs, to notice a client gone.
		return
	}
	c.read = true
	c.firstRead = b.clock.Now()
	if c.line != &b.trusted {
		b.lineUpLocked(c, &b.reading)
	}
}

// handling takes c out of line: its request reached its handler, and the
// server no longer holds its bytes.
func (b *portBudget) handling(c *budgetedConn) {
	c.requestBytes.Store(0)
	b.mu.Lock()
	defer b.mu.Unlock()
	c.read, c.inHandler = false, true
	b.leaveLineLocked(c)
	b.signalRoom()
}

// handled puts c back in line, to wait for its next request.
func (b *portBudget) handled(c *budgetedConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c.inHandler = false
	if c.closed || c.element != nil {
		return
	}
	if c.authorized {
		b.lineUpLocked(c, &b.trusted)
	} else {
		b.lineUpLocked(c, &b.fresh)
	}
}

// authorize marks c as one whose request was authorized.
func (b *portBudget) authorize(c *budgetedConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c.authorized = true
}

// forgetLocked stops counting c: it is closed.
func (b *portBudget) forgetLocked(c *budgetedConn) {
	if c.closed {
		return
	}
	c.closed = true
	b.total -= b.perConn()
	b.leaveLineLocked(c)
}

// forget stops counting c, which closed.
func (b *portBudget) forget(c *budgetedConn) {
	b.mu.Lock()
	b.forgetLocked(c)
	b.mu.Unlock()
	b.signalRoom()
}

// signalRoom wakes an admit waiting for room.
func (b *portBudget) signalRoom() {
	select {
	case b.room <- struct{}{}:
	default:
	}
}

// held is what the port's connections are counted at now.
func (b *portBudget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}
