package nodecache

import (
	"context"
	"net"
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
// window.
type readPacing struct {
	window time.Duration
	// synced tells whether the initial list or watch-list is in: until
	// then, a pause would only slow it down.
	synced func() bool
	// urgent, when set, tells whether updates must be read as they arrive
	// (Informer.ReadAtOnceWhile).
	urgent func() bool
	clock  clock.Clock
}

// active tells whether to pace reads now.
func (p *readPacing) active() bool {
	return p.synced() && (p.urgent == nil || !p.urgent())
}

// dialer returns a dial function whose connections are paced.
func (p *readPacing) dialer() func(ctx context.Context, network, address string) (net.Conn, error) {
	// The values of client-go's own dialer.
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: conn, pacing: p}, nil
	}
}

// pacedConn is a connection whose reads are paced.
type pacedConn struct {
	net.Conn
	pacing *readPacing
	// readAt is when the next read may start; zero is now. The reads of
	// one connection never overlap: its TLS layer serializes them.
	readAt time.Time
}

func (c *pacedConn) Read(b []byte) (int, error) {
	if !c.readAt.IsZero() {
		if wait := c.readAt.Sub(c.pacing.clock.Now()); wait > 0 {
			c.pacing.clock.Sleep(wait)
		}
		c.readAt = time.Time{}
	}
	n, err := c.Conn.Read(b)
	if n > 0 && n < len(b) && c.pacing.active() {
		c.readAt = c.pacing.clock.Now().Add(c.pacing.window)
	}
	return n, err
}
