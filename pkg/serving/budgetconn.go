package serving

import (
	"container/list"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// budgetedConn is a connection that its port's budget counts.
type budgetedConn struct {
	net.Conn
	budget *portBudget
	// done is closed when the connection is.
	done      chan struct{}
	closeOnce sync.Once
	// evicted is closed when the budget closed it to make room: its reads
	// fail, and its Close parks it (parkingLot) until parkUntil, or, if it
	// was authorized, closes it, so that its client opens another at once.
	evicted   chan struct{}
	evictOnce sync.Once
	parkUntil time.Time
	// deadline is the read deadline net/http set, until which a request
	// over perRequest waits; deadlineSet is closed when it is set again.
	deadlineMu  sync.Mutex
	deadline    time.Time
	deadlineSet chan struct{}
	// requestBytes is what its unfinished request sent.
	requestBytes atomic.Int64
	// These are guarded by budget.mu.
	// line is the line it waits in, element its place there; nil while a
	// handler has its request, or once it is closed.
	line    *list.List
	element *list.Element
	// read is set once its unfinished request was read; firstRead is when
	// that began.
	read      bool
	firstRead time.Time
	// authorized is set once a request on it was authorized; inHandler
	// while a handler has its request.
	authorized, inHandler, closed bool
}

func (c *budgetedConn) Read(p []byte) (int, error) {
	select {
	case <-c.evicted:
		return 0, os.ErrDeadlineExceeded
	default:
	}
	c.budget.readingStarts(c)
	left := c.budget.perRequest - c.requestBytes.Load()
	if left <= 0 {
		return 0, c.waitForDeadline()
	}
	n, err := c.Conn.Read(p[:min(int64(len(p)), left)])
	c.requestBytes.Add(int64(n))
	return n, err
}

// waitForDeadline waits until the read deadline net/http set (again, if
// it sets another meanwhile), or until c closes: a request over its share
// is not read on.
func (c *budgetedConn) waitForDeadline() error {
	for {
		c.deadlineMu.Lock()
		deadline, set := c.deadline, c.deadlineSet
		c.deadlineMu.Unlock()
		var expired <-chan time.Time
		var timer *time.Timer
		if !deadline.IsZero() {
			timer = time.NewTimer(time.Until(deadline))
			expired = timer.C
		}
		var err error
		select {
		case <-expired:
			err = os.ErrDeadlineExceeded
		case <-c.evicted:
			err = os.ErrDeadlineExceeded
		case <-c.done:
			err = net.ErrClosed
		case <-set:
		}
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return err
		}
	}
}

func (c *budgetedConn) setReadDeadline(t time.Time) {
	c.deadlineMu.Lock()
	defer c.deadlineMu.Unlock()
	c.deadline = t
	close(c.deadlineSet)
	c.deadlineSet = make(chan struct{})
}

func (c *budgetedConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	if c.isEvicted() {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *budgetedConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	if c.isEvicted() {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}

// evict ends c's reads, the one under way too, so that net/http frees what
// it holds for c and closes it.
func (c *budgetedConn) evict() {
	c.evictOnce.Do(func() {
		c.deadlineMu.Lock()
		c.parkUntil = c.deadline
		c.deadlineMu.Unlock()
		close(c.evicted)
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
	})
}

func (c *budgetedConn) isEvicted() bool {
	select {
	case <-c.evicted:
		return true
	default:
		return false
	}
}

func (c *budgetedConn) Close() error {
	c.budget.forget(c)
	// authorized was last set before the budget evicted c, under its lock.
	if c.isEvicted() && !c.authorized && !c.parkUntil.IsZero() {
		c.closeOnce.Do(func() {
			close(c.done)
			c.budget.lot.park(c.Conn, c.parkUntil)
		})
		return nil
	}
	return c.closeConn()
}

func (c *budgetedConn) closeConn() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.done)
		err = c.Conn.Close()
	})
	return err
}

// budgetedListener accepts connections that count against budget.
type budgetedListener struct {
	net.Listener
	budget *portBudget
	// closed is closed with the listener: an Accept waiting for room ends.
	closed    chan struct{}
	closeOnce *sync.Once
}

func newBudgetedListener(listener net.Listener, budget *portBudget) budgetedListener {
	l := budgetedListener{Listener: listener, budget: budget, closed: make(chan struct{}), closeOnce: &sync.Once{}}
	go budget.lot.run(l.closed)
	return l
}

func (l budgetedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c, ok := l.budget.admit(conn, l.closed)
	if !ok {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	return c, nil
}

func (l budgetedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
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

// budgeted tells the budget of a request's connection that a handler has
// it, and when it is done.
func budgeted(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(connKey{}).(*budgetedConn)
		if !ok {
			handler.ServeHTTP(w, r)
			return
		}
		c.budget.handling(c)
		defer c.budget.handled(c)
		handler.ServeHTTP(w, r)
	})
}

// trustedOnceAuthorized marks the connection of every request it handles as one
// whose request was authorized: it wraps what is served after the checks.
func trustedOnceAuthorized(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*budgetedConn); ok {
			c.budget.authorize(c)
		}
		handler.ServeHTTP(w, r)
	})
}
