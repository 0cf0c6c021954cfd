package main

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeConn is a budgetedConn over one end of a pipe, for the budget's own
// tests.
func pipeConn(b *heldBytes) (*budgetedConn, net.Conn) {
	server, client := net.Pipe()
	return &budgetedConn{Conn: server, budget: b}, client
}

// When a read would go over the budget, the connection holding the most is
// refused, the newest of equals, and the reader itself if it holds the most.
func TestTheLargestHolderIsRefusedFirst(t *testing.T) {
	tests := []struct {
		name string
		// charges are each connection's charges, in order: connection
		// index and bytes.
		charges [][2]int
		// refused are the connections refused, by index.
		refused []int
		held    int64
	}{
		{name: "within the budget", charges: [][2]int{{0, 40}, {1, 50}}, held: 90},
		{name: "the largest other goes", charges: [][2]int{{0, 80}, {1, 10}, {2, 15}}, refused: []int{0}, held: 25},
		{name: "the reader holding the most goes", charges: [][2]int{{0, 30}, {1, 30}, {2, 50}}, refused: []int{2}, held: 60},
		{name: "the newest of equals goes", charges: [][2]int{{0, 40}, {1, 40}, {2, 30}}, refused: []int{1}, held: 70},
		{name: "a small probe stays while others go", charges: [][2]int{{0, 45}, {1, 45}, {2, 5}, {3, 45}, {4, 45}}, refused: []int{3, 4}, held: 95},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newHeldBytes(100)
			conns := map[int]*budgetedConn{}
			for _, charge := range tt.charges {
				i := charge[0]
				if conns[i] == nil {
					conns[i], _ = pipeConn(b)
				}
				b.charge(conns[i], charge[1])
			}
			for i, c := range conns {
				_, holding := b.holders[c]
				assert.Equal(t, !containsInt(tt.refused, i), holding, "connection %d still holds its bytes", i)
			}
			assert.Equal(t, tt.held, b.held())
		})
	}
}

func containsInt(list []int, v int) bool { return slices.Contains(list, v) }

// A request that reached its handler no longer counts, nor does a closed
// connection.
func TestSettledAndClosedConnectionsHoldNothing(t *testing.T) {
	b := newHeldBytes(1 << 20)
	c, _ := pipeConn(b)
	require.True(t, b.charge(c, 500))
	b.release(c)
	assert.Zero(t, b.held())
	require.True(t, b.charge(c, 300))
	_ = c.Close()
	assert.Zero(t, b.held())
	assert.Empty(t, b.holders)
}

// Thousands of connections, each holding an unfinished header line of
// nearly the most a request may have, never make the probe port hold more
// than its budget, and every kubelet probe, a whole request at once, is
// answered meanwhile.
func TestUnfinishedHeadersCannotCrowdOutProbes(t *testing.T) {
	limits := probeLimits
	limits.heldBudget = 64 << 10
	addr, b := startBudgetedPort(t, limits, nil)
	holdUnfinished(t, 300, addr, func(conn net.Conn) error {
		_, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nX-Fill: " + strings.Repeat("a", limits.maxHeaderBytes)))
		return err
	})

	kubelet := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		assert.LessOrEqual(t, b.held(), limits.heldBudget, "bytes held")
		resp, err := kubelet.Get("http://" + addr + "/healthz")
		require.NoError(t, err, "probe %d", i)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		time.Sleep(50 * time.Millisecond)
	}
}

// The same on the metrics port with unfinished TLS ClientHellos that
// announce 65,000 bytes and send 60,000: the port holds no more than its
// budget, and every scrape is answered.
func TestUnfinishedClientHellosCannotCrowdOutScrapes(t *testing.T) {
	limits := metricsLimits
	limits.heldBudget = 256 << 10
	tlsConfig, err := serverTLS("", "")
	require.NoError(t, err)
	addr, b := startBudgetedPort(t, limits, tlsConfig)
	holdUnfinished(t, 200, addr, func(conn net.Conn) error {
		_, err := conn.Write(unfinishedClientHello(65000, 60000))
		return err
	})

	prometheus := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed certificate
	for i := range 10 {
		assert.LessOrEqual(t, b.held(), limits.heldBudget, "bytes held")
		resp, err := prometheus.Get("https://" + addr + "/metrics")
		require.NoError(t, err, "scrape %d", i)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		time.Sleep(100 * time.Millisecond)
	}
}

// startBudgetedPort serves ok as the controller does, and returns its
// address and budget.
func startBudgetedPort(t *testing.T, limits serverLimits, tlsConfig *tls.Config) (string, *heldBytes) {
	t.Helper()
	p, err := bind("test", "127.0.0.1:0", limits, tlsConfig)
	require.NoError(t, err)
	p.serve(t.Context(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	return p.listener.Addr().String(), p.held
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

// A port in use fails bindPorts with the address, before anything starts.
func TestAPortInUseFailsAtOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	opts := defaultOptions()
	opts.metricsAddress = taken.Addr().String()
	opts.probeAddress = "127.0.0.1:0"
	_, err = bindPorts(opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the metrics server: listen tcp %s: bind: address already in use", taken.Addr()))
}
