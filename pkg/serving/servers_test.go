package serving

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer serves ok on a loopback port with the given limits.
func startServer(t *testing.T, limits serverLimits) string {
	t.Helper()
	return startPort(t, limits, nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
}

// startPort binds a loopback port and serves handler on it as the
// controller does, until the test ends.
func startPort(t *testing.T, limits serverLimits, tlsConfig *tls.Config, handler http.Handler) string {
	t.Helper()
	p, err := bind("test", "127.0.0.1:0", limits, tlsConfig)
	require.NoError(t, err)
	p.Serve(t.Context(), handler)
	return p.listener.Addr().String()
}

// get sends a request on a connection and reads its response.
func get(t *testing.T, conn net.Conn) {
	t.Helper()
	_, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: test\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
}

// closedWithin tells whether the server closes a connection within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := conn.Read(make([]byte, 1))
	return err == io.EOF
}

// Idle connections, and connections that never send a request, are closed:
// they would otherwise stay open forever, 40 KiB each.
func TestIdleConnectionsAreClosed(t *testing.T) {
	addr := startServer(t, serverLimits{readHeader: 200 * time.Millisecond, read: time.Second, write: time.Second, idle: 300 * time.Millisecond, maxHeaderBytes: 4 << 10, budget: 8 << 20, perRequest: 4 << 10})

	idle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer idle.Close()
	get(t, idle)
	assert.True(t, closedWithin(idle, 2*time.Second), "an idle connection after a request")

	silent, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer silent.Close()
	assert.True(t, closedWithin(silent, 2*time.Second), "a connection that never sends a request")
}

// startTLSServer serves handler over TLS, with a self-signed certificate,
// on a loopback port with the metrics server's limits.
func startTLSServer(t *testing.T, handler http.Handler) string {
	t.Helper()
	return startTLSPort(t, metricsLimits, handler)
}

// startTLSPort serves handler over TLS, with a self-signed certificate, on
// a loopback port with the given limits.
func startTLSPort(t *testing.T, limits serverLimits, handler http.Handler) string {
	t.Helper()
	tlsConfig, err := serverTLS("", "")
	require.NoError(t, err)
	return startPort(t, limits, tlsConfig, handler)
}

// Neither server speaks HTTP/2: its streams would multiply the requests one
// connection carries.
func TestNoHTTP2(t *testing.T) {
	addr := startTLSServer(t, http.NotFoundHandler())
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}) //nolint:gosec // a test's self-signed certificate
	require.NoError(t, err)
	defer conn.Close()
	assert.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol)
}

// A peer that keeps thousands of silent connections open to the probe port,
// opening a new one as each is closed, delays no kubelet probe: each is
// answered within the kubelet's 1 s timeout (a plain cap of 64
// connections answered none).
func TestProbesAreAnsweredThroughSilentConnections(t *testing.T) {
	addr := startServer(t, probeLimits)
	holdSilentConnections(t, addr, 2000)

	answeredEachTime(t, newKubelet(), "http://"+addr+"/healthz", 10, 300*time.Millisecond, nil)
}

// The same on the metrics port, over TLS: 800 silent connections, each
// opened again as soon as it is closed, and every scrape is answered
// within Prometheus's usual timeout (a plain cap of 256 answered none).
func TestScrapesAreAnsweredThroughSilentConnections(t *testing.T) {
	addr := startTLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	holdSilentConnections(t, addr, 800)

	answeredEachTime(t, newPrometheus(), "https://"+addr+"/metrics", 5, 300*time.Millisecond, nil)
}

// newKubelet probes as the kubelet does: a new connection each time, 1 s
// timeout.
func newKubelet() *http.Client {
	return &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// newPrometheus scrapes as Prometheus does: a kept connection, 2 s timeout.
func newPrometheus() *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed certificate
}

// answeredEachTime gets url times times, pause apart, each answered 200;
// check, if any, runs before each.
func answeredEachTime(t *testing.T, client *http.Client, url string, times int, pause time.Duration, check func()) {
	t.Helper()
	for i := range times {
		if check != nil {
			check()
		}
		resp, err := client.Get(url)
		require.NoError(t, err, "request %d", i)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		time.Sleep(pause)
	}
}

// holdSilentConnections keeps n connections to addr open that send
// nothing, each opened again as soon as the server closes it, until the
// test ends; it returns once all n are open.
func holdSilentConnections(t *testing.T, addr string, n int) {
	t.Helper()
	holdUnfinished(t, n, addr, func(net.Conn) error { return nil })
}
