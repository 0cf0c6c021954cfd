package serving

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// closedChannel makes an admit that finds no room give up at once.
var closedChannel = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// When the port has no room for another connection, it closes the one
// read longest ago, once past the grace, then authorized ones; never one
// not read yet, read within the grace, or whose request a handler has.
// With none to close, a new one waits.
func TestTheConnectionsWaitingLongestAreClosedFirst(t *testing.T) {
	tests := []struct {
		name string
		// events are, in order: "+" admits a connection; "rN" reads
		// connection N; "hN" has a handler take its request; "aN" has it
		// handled and authorized; "t" lets the grace pass.
		events []string
		// room is how many connections the port holds.
		room     int64
		closed   []int
		admitted int
	}{
		{name: "within the budget", events: []string{"+", "+"}, room: 2, admitted: 2},
		{name: "a request read past the grace goes for a new one", events: []string{"+", "r0", "t", "+", "+"}, room: 2, closed: []int{0}, admitted: 3},
		{name: "none read: the new one waits", events: []string{"+", "+", "+"}, room: 2, admitted: 2},
		{name: "a first read within the grace stays", events: []string{"+", "r0", "+", "+"}, room: 2, admitted: 2},
		{name: "the one read first goes first", events: []string{"+", "+", "r1", "r0", "t", "+"}, room: 2, closed: []int{1}, admitted: 3},
		{name: "a request in its handler stays", events: []string{"+", "h0", "+", "r1", "t", "+"}, room: 2, closed: []int{1}, admitted: 3},
		{name: "a request in its handler stays while net/http reads on", events: []string{"+", "r0", "h0", "r0", "+", "r1", "t", "+"}, room: 2, closed: []int{1}, admitted: 3},
		{name: "an authorized connection goes last", events: []string{"+", "a0", "+", "r1", "+", "r2", "t", "+"}, room: 3, closed: []int{1}, admitted: 4},
		{name: "an authorized connection waits for the grace of the others", events: []string{"+", "a0", "+", "r1", "+"}, room: 2, admitted: 2},
		{name: "an authorized connection waits while others are not read yet", events: []string{"+", "a0", "+", "+"}, room: 2, admitted: 2},
		{name: "an authorized connection goes when no other is left", events: []string{"+", "a0", "+", "h1", "+"}, room: 2, closed: []int{0}, admitted: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Now())
			b := newPortBudget(tt.room*connCost, 0, clk)
			var conns []*budgetedConn
			for _, e := range tt.events {
				switch e {
				case "+":
					server, _ := net.Pipe()
					if c, ok := b.admit(server, closedChannel); ok {
						conns = append(conns, c)
					}
					continue
				case "t":
					clk.SetTime(clk.Now().Add(readGrace))
					continue
				}
				c := conns[e[1]-'0']
				switch e[0] {
				case 'r':
					b.readingStarts(c)
				case 'h':
					b.handling(c)
				case 'a':
					b.handling(c)
					b.authorize(c)
					b.handled(c)
				}
			}
			var closed []int
			for i, c := range conns {
				if c.closed {
					closed = append(closed, i)
				}
			}
			assert.Equal(t, tt.closed, closed)
			assert.Len(t, conns, tt.admitted)
			assert.LessOrEqual(t, b.held(), tt.room*connCost)
		})
	}
}

// A closed connection holds nothing.
func TestAClosedConnectionHoldsNothing(t *testing.T) {
	b := newPortBudget(1<<20, 4096, clock.RealClock{})
	server, _ := net.Pipe()
	c, _ := b.admit(server, nil)
	assert.Equal(t, int64(connCost+4096), b.held())
	_ = c.Close()
	assert.Zero(t, b.held())
}

// A request over its share is not read on until its read deadline.
func TestARequestOverItsShareWaitsForItsDeadline(t *testing.T) {
	b := newPortBudget(1<<20, 10, clock.RealClock{})
	server, client := net.Pipe()
	c, _ := b.admit(server, nil)
	go func() { _, _ = client.Write([]byte("0123456789abcdef")) }()
	n, err := c.Read(make([]byte, 10))
	require.NoError(t, err)
	require.Equal(t, 10, n)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	started := time.Now()
	_, err = c.Read(make([]byte, 10))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.GreaterOrEqual(t, time.Since(started), 90*time.Millisecond)
	_ = c.Close()
}

// Hundreds of connections, each holding an unfinished header line of the
// most a request may have, and opened again when closed, never make the
// probe port hold more than its budget, and every kubelet probe, a whole
// request at once, is answered meanwhile.
func TestUnfinishedHeadersCannotCrowdOutProbes(t *testing.T) {
	limits := probeLimits
	limits.budget = 100 * (connCost + limits.perRequest)
	addr, b := startBudgetedPort(t, limits, nil)
	holdUnfinished(t, 300, addr, func(conn net.Conn) error {
		_, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nX-Fill: " + strings.Repeat("a", limits.maxHeaderBytes)))
		return err
	})

	answeredEachTime(t, newKubelet(), "http://"+addr+"/healthz", 20, 50*time.Millisecond, func() {
		assert.LessOrEqual(t, b.held(), limits.budget, "held")
	})
}

// The same on the metrics port with unfinished TLS ClientHellos that
// announce 65,000 bytes and send 60,000: the port holds no more than its
// budget, and every scrape, on a new connection or a kept one, is
// answered.
func TestUnfinishedClientHellosCannotCrowdOutScrapes(t *testing.T) {
	limits := metricsLimits
	limits.budget = 100 * (connCost + limits.perRequest)
	tlsConfig, err := serverTLS("", "")
	require.NoError(t, err)
	addr, b := startBudgetedPort(t, limits, tlsConfig)
	holdUnfinished(t, 200, addr, func(conn net.Conn) error {
		_, err := conn.Write(unfinishedClientHello(65000, 60000))
		return err
	})

	answeredEachTime(t, newPrometheus(), "https://"+addr+"/metrics", 10, 100*time.Millisecond, func() {
		assert.LessOrEqual(t, b.held(), limits.budget, "held")
	})
}

// startBudgetedPort serves ok as the controller does, and returns its
// address and budget.
func startBudgetedPort(t *testing.T, limits serverLimits, tlsConfig *tls.Config) (string, *portBudget) {
	t.Helper()
	p, err := bind("test", "127.0.0.1:0", limits, tlsConfig)
	require.NoError(t, err)
	p.Serve(t.Context(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	return p.listener.Addr().String(), p.budget
}

// holdUnfinished keeps n connections to addr, each sending what send sends
// and then waiting, opened again as soon as the server closes one, until
// the test ends; it returns once all have sent once.
func holdUnfinished(t *testing.T, n int, addr string, send func(net.Conn) error) {
	t.Helper()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	sent := make(chan struct{}, n)
	for range n {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					continue
				}
				if send(conn) == nil {
					select {
					case sent <- struct{}{}:
					default:
					}
					_, _ = conn.Read(make([]byte, 1))
				}
				_ = conn.Close()
			}
		}()
	}
	for range n {
		<-sent
	}
}

// unfinishedClientHello is the start of a TLS handshake record that
// announces a ClientHello of announced bytes and carries sent of them.
func unfinishedClientHello(announced, sent int) []byte {
	var msg []byte
	// A record of up to 16 KiB each: type handshake, version TLS 1.0.
	body := make([]byte, 4+sent)
	body[0] = 1 // ClientHello
	body[1], body[2], body[3] = byte(announced>>16), byte(announced>>8), byte(announced)
	for len(body) > 0 {
		size := min(len(body), 16<<10)
		header := []byte{22, 3, 1, 0, 0}
		binary.BigEndian.PutUint16(header[3:], uint16(size))
		msg = append(msg, header...)
		msg = append(msg, body[:size]...)
		body = body[size:]
	}
	return msg
}

// A port in use fails Bind with the address, before anything starts.
func TestAPortInUseFailsAtOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = Bind(Config{MetricsAddress: taken.Addr().String(), ProbeAddress: "127.0.0.1:0", MetricsTLS: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the metrics server: listen tcp %s: bind: address already in use", taken.Addr()))
}
