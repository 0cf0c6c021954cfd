package main

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
)

// errRefused ends a connection whose unfinished request the port's budget
// no longer holds.
var errRefused = errors.New("the port's budget for unfinished requests is spent")

// heldBytes is a port's budget for what its callers make the process hold
// before a request reaches its handler: the bytes of its TLS handshake and
// headers (and a body, which no handler here reads), counted as they are
// read. When a read would take the port over its budget, the connection
// holding the most is closed, the newest of equals, until the read fits; if
// that is the reader itself, it is the one refused. The kubelet's probe and
// Prometheus's scrape send their whole request, a few hundred bytes to a
// few KiB, at once; an attacker must hold more to hold anything, so it is
// always an attacker that goes first. A handler's request is settled: its
// bytes are no longer held by the server (only the parsed request is).
type heldBytes struct {
	limit int64

	mu    sync.Mutex
	total int64
	// holders are the connections holding bytes, with their sequence
	// number: a higher one is newer.
	holders map[*budgetedConn]uint64
	next    uint64
}

func newHeldBytes(limit int64) *heldBytes {
	return &heldBytes{limit: limit, holders: map[*budgetedConn]uint64{}}
}

// charge counts n more bytes held by c; false when c is refused. The
// connections closed to make room are closed before it returns.
func (b *heldBytes) charge(c *budgetedConn, n int) bool {
	b.mu.Lock()
	if _, ok := b.holders[c]; !ok {
		b.next++
		b.holders[c] = b.next
	}
	c.held += int64(n)
	b.total += int64(n)
	var victims []*budgetedConn
	refused := false
	for b.total > b.limit {
		victim := b.largest()
		b.releaseLocked(victim)
		if victim == c {
			refused = true
			break
		}
		victims = append(victims, victim)
	}
	b.mu.Unlock()
	for _, v := range victims {
		_ = v.Conn.Close()
	}
	return !refused
}

// largest is the holder with the most bytes, the newest of equals; b.mu is
// held and there is at least one holder.
func (b *heldBytes) largest() *budgetedConn {
	var top *budgetedConn
	var topSeq uint64
	for c, seq := range b.holders {
		if top == nil || c.held > top.held || c.held == top.held && seq > topSeq {
			top, topSeq = c, seq
		}
	}
	return top
}

// release stops counting what c holds: its request reached the handler,
// or it closed.
func (b *heldBytes) release(c *budgetedConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(c)
}

func (b *heldBytes) releaseLocked(c *budgetedConn) {
	if _, ok := b.holders[c]; !ok {
		return
	}
	b.total -= c.held
	c.held = 0
	delete(b.holders, c)
}

// held is what the port's connections hold now.
func (b *heldBytes) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// budgetedListener accepts connections whose reads count against budget.
type budgetedListener struct {
	net.Listener
	budget *heldBytes
}

func (l budgetedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &budgetedConn{Conn: conn, budget: l.budget}, nil
}

// budgetedConn is a connection whose reads count against its port's budget
// until its request is settled.
type budgetedConn struct {
	net.Conn
	budget *heldBytes
	// held is what it holds; budget.mu guards it.
	held int64
}

func (c *budgetedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.budget.charge(c, n) {
		_ = c.Conn.Close()
		return 0, errRefused
	}
	return n, err
}

func (c *budgetedConn) Close() error {
	c.budget.release(c)
	return c.Conn.Close()
}

// connKey is the context key of a request's budgetedConn.
type connKey struct{}

// withConn is an http.Server's ConnContext: it lets the handler find the
// connection its request came on, under TLS too.
func withConn(ctx context.Context, conn net.Conn) context.Context {
	if t, ok := conn.(*tls.Conn); ok {
		conn = t.NetConn()
	}
	if c, ok := conn.(*budgetedConn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// settled releases a request's bytes from its port's budget before it is
// handled: its headers are parsed, and the server no longer holds them.
func settled(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*budgetedConn); ok {
			c.budget.release(c)
		}
		handler.ServeHTTP(w, r)
	})
}
