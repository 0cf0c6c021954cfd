package serving

import (
	"container/list"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// maxParked is the most connections a port keeps parked; past it, the
// oldest is closed.
const maxParked = 16384

// parkingLot holds the connections a port's budget closed to make room
// while they waited for a request, until the read deadline they had. Their
// goroutine and buffers are freed at once, but whoever holds them and waits
// for an answer keeps waiting, instead of coming back at once with a new
// connection for the port to accept, read and close again. Each costs the
// process its socket, a few hundred bytes, and the kernel what its peer
// sent and nobody reads, at most 8 KiB with its bookkeeping
// (receiveBuffer).
type parkingLot struct {
	mu sync.Mutex
	// parked are oldest first; deadlines come in about that order, as
	// each port gives every request the same time: closeExpired may close
	// one a little late, never early.
	parked list.List
	wake   chan struct{}
}

type parkedConn struct {
	conn  net.Conn
	until time.Time
}

func newParkingLot() *parkingLot { return &parkingLot{wake: make(chan struct{}, 1)} }

// park holds conn until about until: between half and one and a half
// times the time left, so that the connections parked in one burst are not
// all closed, and opened again, in another.
func (l *parkingLot) park(conn net.Conn, until time.Time) {
	left := time.Until(until)
	until = until.Add(time.Duration(rand.Int64N(int64(max(left, 1)))) - left/2)
	l.mu.Lock()
	l.parked.PushBack(parkedConn{conn: conn, until: until})
	var over net.Conn
	if l.parked.Len() > maxParked {
		over = l.parked.Remove(l.parked.Front()).(parkedConn).conn
	}
	l.mu.Unlock()
	if over != nil {
		_ = over.Close()
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run closes each parked connection when its deadline passes, and every
// one when stop ends.
func (l *parkingLot) run(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := l.closeExpired(time.Now())
		if next.IsZero() {
			next = time.Now().Add(time.Hour)
		}
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-l.wake:
		case <-stop:
			l.closeExpired(time.Now().Add(100 * 365 * 24 * time.Hour))
			return
		}
	}
}

// closeExpired closes the connections at the front whose deadline is
// before now, and returns the next deadline, zero with none parked.
func (l *parkingLot) closeExpired(now time.Time) time.Time {
	l.mu.Lock()
	var expired []net.Conn
	var next time.Time
	for e := l.parked.Front(); e != nil; e = l.parked.Front() {
		p := e.Value.(parkedConn)
		if p.until.After(now) {
			next = p.until
			break
		}
		expired = append(expired, p.conn)
		l.parked.Remove(e)
	}
	l.mu.Unlock()
	for _, conn := range expired {
		_ = conn.Close()
	}
	return next
}
