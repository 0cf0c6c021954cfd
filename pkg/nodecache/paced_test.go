package nodecache

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// scriptedConn answers each read with the next count of bytes, or io.EOF
// for a negative count; what does not fit the read is left for the next.
type scriptedConn struct {
	net.Conn
	counts []int
	// reads counts the reads, system calls on a socket.
	reads int
}

func (c *scriptedConn) Read(b []byte) (int, error) {
	c.reads++
	n := c.counts[0]
	c.counts = c.counts[1:]
	if n < 0 {
		return 0, io.EOF
	}
	if n > len(b) {
		c.counts = append([]int{n - len(b)}, c.counts...)
		n = len(b)
	}
	return n, nil
}

func TestPacedConnWaitsOnlyAfterEmptyingTheSocket(t *testing.T) {
	const window, buffer = 100 * time.Millisecond, pacedReadSize
	tests := []struct {
		name string
		// watch is true for a watch of changes, false for a list.
		watch bool
		// counts are the bytes each read returns out of buffer.
		counts []int
		// waits are how long each read waited before reading.
		waits []time.Duration
	}{
		{name: "a short read makes the next one wait", watch: true,
			counts: []int{5, 7, 3}, waits: []time.Duration{0, window, window}},
		{name: "a full read leaves more to read at once", watch: true,
			counts: []int{buffer, buffer, 2, buffer}, waits: []time.Duration{0, 0, 0, window}},
		{name: "an ended connection does not wait", watch: true,
			counts: []int{-1, 4}, waits: []time.Duration{0, 0}},
		{name: "a list never waits", watch: false,
			counts: []int{5, 7, 3}, waits: []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Unix(0, 0))
			pacing := &readPacing{window: window, clock: clock}
			conn := &pacedConn{Conn: &scriptedConn{counts: tt.counts}, pacing: pacing}
			conn.watch.Store(tt.watch)
			var waits []time.Duration
			for range tt.counts {
				before := clock.Now()
				_, _ = conn.Read(make([]byte, buffer))
				waits = append(waits, clock.Since(before))
			}
			assert.Equal(t, tt.waits, waits)
		})
	}
}

func TestPacedConnReadsTheSocketInLargeReads(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	pacing := &readPacing{window: 100 * time.Millisecond, clock: clock}
	socket := &scriptedConn{counts: []int{40 << 10, 1}}
	conn := &pacedConn{Conn: socket, pacing: pacing}
	conn.watch.Store(true)
	read := 0
	for read < 40<<10 {
		// TLS reads a record at a time.
		n, err := conn.Read(make([]byte, 16<<10))
		require.NoError(t, err)
		read += n
	}
	assert.Equal(t, 40<<10, read)
	assert.Equal(t, 1, socket.reads, "one system call for the window's 40 KB")
	assert.Equal(t, time.Unix(0, 0), clock.Now(), "and no wait while it lasts")
	before := clock.Now()
	_, _ = conn.Read(make([]byte, 16<<10))
	assert.Equal(t, 100*time.Millisecond, clock.Since(before), "the socket was emptied: the next read waits")
}

func TestPacedConnWaitsOnlyWhatIsLeftOfTheWindow(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	pacing := &readPacing{window: 100 * time.Millisecond, clock: clock}
	conn := &pacedConn{Conn: &scriptedConn{counts: []int{1, 1}}, pacing: pacing}
	conn.watch.Store(true)
	_, _ = conn.Read(make([]byte, 8))
	// Handling what was read took 30ms.
	clock.Step(30 * time.Millisecond)
	before := clock.Now()
	_, _ = conn.Read(make([]byte, 8))
	assert.Equal(t, 70*time.Millisecond, clock.Since(before))
}

func TestPacingStandsDownFromWhenACreateMayBeDue(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	pacing := &readPacing{window: time.Second, clock: clock}
	assert.True(t, pacing.active(), "no one asks for more")
	i := &Informer{pacing: pacing}
	i.ReadAtOnceFrom("workers", time.Time{})
	assert.True(t, pacing.active(), "nothing may be created")
	i.ReadAtOnceFrom("workers", clock.Now().Add(5*time.Second))
	assert.True(t, pacing.active(), "a deadline 5s away")
	clock.Step(4 * time.Second)
	assert.False(t, pacing.active(), "the deadline comes within a window")
	i.ReadAtOnceFrom("others", clock.Now())
	i.ReadAtOnceFrom("workers", time.Time{})
	assert.False(t, pacing.active(), "another one's create is due")
	i.ReadAtOnceFrom("others", time.Time{})
	assert.True(t, pacing.active(), "nothing may be created again")
}

// Only a watch of changes is paced from its start; a list is read at once,
// and a watch that streams the initial list first, as the informer's
// relist after a 410 Gone does, until its initial events end.
func TestOnlyAWatchOfChangesIsPaced(t *testing.T) {
	for query, want := range map[string][2]bool{
		"watch=true&resourceVersion=12&allowWatchBookmarks=true":                                       {true, false},
		"resourceVersion=0&limit=500":                                                                  {false, false},
		"watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true": {false, true},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/nodes?"+query, nil)
		paced, initialList := pacedRequest(req)
		assert.Equal(t, want, [2]bool{paced, initialList}, query)
	}
}

// The connection a request goes out on is marked with whether it is paced,
// request by request: a keep-alive connection carries a watch, then a list.
func TestTheConnectionOfAListIsNotPaced(t *testing.T) {
	pacing := &readPacing{window: time.Millisecond, clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	get, conns := pacedGets(t, pacing)
	for _, tc := range []struct {
		query string
		paced bool
	}{{"watch=true&resourceVersion=1", true}, {"limit=500", false}, {"watch=true&resourceVersion=2", true}, {"watch=true&sendInitialEvents=true", false}} {
		get(tc.query)
		require.Len(t, *conns, 1, "one keep-alive connection")
		assert.Equal(t, tc.paced, (*conns)[0].watch.Load(), tc.query)
	}
}

// A watch that streams the initial list is paced once its initial events
// end: client-go reads changes from it for minutes after, and unpaced a
// heartbeat costs twice the CPU. A later request on
// the connection is marked as its own.
func TestAWatchOfTheInitialListIsPacedOnceTheListEnds(t *testing.T) {
	pacing := &readPacing{window: time.Millisecond, clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	get, conns := pacedGets(t, pacing)
	get("watch=true&sendInitialEvents=true")
	require.Len(t, *conns, 1)
	assert.False(t, (*conns)[0].watch.Load(), "the initial list is read at once")
	pacing.initialEventsEnded()
	assert.True(t, (*conns)[0].watch.Load(), "the changes after it are paced")

	get("watch=true&sendInitialEvents=true")
	get("limit=500")
	pacing.initialEventsEnded()
	assert.False(t, (*conns)[0].watch.Load(), "a list on the connection since is not paced")
}

// pacedGets serves GETs through a paced client; get sends one with a
// query and reads its answer whole; conns are the connections it dialled.
func pacedGets(t *testing.T, pacing *readPacing) (get func(query string), conns *[]*pacedConn) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
	t.Cleanup(server.Close)
	conns = &[]*pacedConn{}
	dial := pacing.dialer()
	transport := &http.Transport{DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err == nil {
			*conns = append(*conns, conn.(*pacedConn))
		}
		return conn, err
	}}
	client := &http.Client{Transport: pacing.wrap(transport)}
	return func(query string) {
		resp, err := client.Get(server.URL + "/api/v1/nodes?" + query)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}, conns
}
