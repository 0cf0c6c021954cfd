// Package serving serves the controller's metrics and probe ports to
// callers it cannot trust: each port's connections and their unfinished
// requests within a budget, and the metrics behind delegated
// authentication and authorization whose reviews are bounded too.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// serverLimits bound what callers of the metrics and probe servers can make
// the process hold: each port's connections, and their unfinished requests,
// within its budget (portBudget), whoever opens them.
type serverLimits struct {
	// readHeader bounds the time to send a request's headers (and, under
	// TLS, to finish the handshake), read its whole request, write a
	// response, and keep an idle connection open.
	readHeader, read, write, idle time.Duration
	// maxHeaderBytes bounds one request's headers (net/http allows 4 KiB
	// more for the request line).
	maxHeaderBytes int
	// budget bounds what the port's connections hold at once: connCost
	// each and their unfinished requests; perRequest one unfinished request
	// (TLS handshake and headers).
	budget, perRequest int64
}

// probeLimits serve the kubelet, which opens a connection per probe, sends
// a request of about 150 bytes at once, and gives up after a second. The
// budget holds about 400 connections with unfinished requests, or 500
// silent ones; past it, the one that has waited longest is closed, never
// the probe that just sent its request. The short timeouts, as in
// kube-controller-manager and controller-runtime, bound how long a silent
// one waits.
var probeLimits = serverLimits{
	readHeader: 2 * time.Second, read: 2 * time.Second, write: 5 * time.Second, idle: 2 * time.Second,
	maxHeaderBytes: 4 << 10, budget: 8 << 20, perRequest: 4 << 10,
}

// metricsLimits serve Prometheus, which keeps a connection per target and
// scrapes every 15 to 60 seconds with a bearer token of one or two KiB, and
// pprof, whose CPU profile writes after 30 seconds. A silent connection,
// TLS handshake included, is closed after 5 s. The budget holds about 350
// connections with unfinished requests, or 1,000 silent ones; Prometheus's
// connection, once authorized, is closed only when no other is left.
var metricsLimits = serverLimits{
	readHeader: 5 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: 90 * time.Second,
	maxHeaderBytes: 16 << 10, budget: 16 << 20, perRequest: 32 << 10,
}

// Port is a server's listener, bound before anything else starts, and
// what it serves with.
type Port struct {
	name     string
	listener net.Listener
	limits   serverLimits
	// tls is nil for plain HTTP.
	tls *tls.Config
	// budget counts what its connections hold.
	budget *portBudget
}

// Config says where the ports listen, and what the metrics port serves;
// an address of "" or "0" disables its port.
type Config struct {
	MetricsAddress, ProbeAddress string
	// MetricsTLS serves the metrics port over HTTPS, with the certificate
	// of TLSCertFile and TLSKeyFile or, without them, a self-signed one,
	// to authorized callers alone (Config.MetricsHandler).
	MetricsTLS              bool
	TLSCertFile, TLSKeyFile string
	// Profiling serves Go's pprof under /debug/pprof/ beside /metrics,
	// with the same protection.
	Profiling bool
}

// Ports are the process's listeners; nil for a disabled one.
type Ports struct {
	Metrics, Probes *Port
}

// Bind binds every port, and loads or makes the metrics server's
// certificate, before anything else starts: a port in use or a certificate
// that cannot be read ends the process at once, with its error, instead of
// leaving it running without its probes.
func Bind(config Config) (*Ports, error) {
	var p Ports
	var metricsTLS *tls.Config
	if config.MetricsTLS && enabled(config.MetricsAddress) {
		var err error
		if metricsTLS, err = serverTLS(config.TLSCertFile, config.TLSKeyFile); err != nil {
			return nil, fmt.Errorf("the metrics server's certificate: %w", err)
		}
	}
	var err error
	if p.Metrics, err = bind("metrics", config.MetricsAddress, metricsLimits, metricsTLS); err != nil {
		return nil, err
	}
	if p.Probes, err = bind("probes", config.ProbeAddress, probeLimits, nil); err != nil {
		p.Close()
		return nil, err
	}
	return &p, nil
}

// Close closes the listeners that no server took over.
func (p *Ports) Close() {
	for _, port := range []*Port{p.Metrics, p.Probes} {
		if port != nil {
			_ = port.listener.Close()
		}
	}
}

func enabled(address string) bool { return address != "" && address != "0" }

// bind listens on address; "0" disables the server (nil, nil).
func bind(name, address string, limits serverLimits, tlsConfig *tls.Config) (*Port, error) {
	if !enabled(address) {
		return nil, nil
	}
	listener, err := listen(address)
	if err != nil {
		return nil, fmt.Errorf("the %s server: %w", name, err)
	}
	return &Port{name: name, listener: listener, limits: limits, tls: tlsConfig, budget: newPortBudget(limits.budget, limits.perRequest, clock.RealClock{})}, nil
}

// serverTLS is the metrics server's TLS configuration, with the certificate
// given or, without one, a self-signed one.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if certFile != "" {
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	} else {
		var certPEM, keyPEM []byte
		certPEM, keyPEM, err = certutil.GenerateSelfSignedCertKey("nhc-controller", nil, []string{"nhc-controller-metrics.nhc-system.svc", "localhost"})
		if err == nil {
			cert, err = tls.X509KeyPair(certPEM, keyPEM)
		}
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Serve serves handler on p until ctx ends; a nil p serves nothing.
func (p *Port) Serve(ctx context.Context, handler http.Handler) {
	if p == nil {
		return
	}
	server := newServer(p.limits, p.tls, handler)
	logger := klog.FromContext(ctx)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()
	go func() {
		logger.Info("Serving", "server", p.name, "address", p.listener.Addr().String(), "tls", p.tls != nil)
		if err := serveOn(server, newBudgetedListener(p.listener, p.budget)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", p.name, "address", p.listener.Addr().String())
		}
	}()
}

// newServer serves HTTP/1.1 only: HTTP/2 multiplies the requests one
// connection carries (250 streams each), and neither the kubelet nor
// Prometheus needs it (controller-runtime turns it off on its metrics
// server for the same reason).
func newServer(limits serverLimits, tlsConfig *tls.Config, handler http.Handler) *http.Server {
	return &http.Server{
		Handler: budgeted(handler), TLSConfig: tlsConfig, ConnContext: withConn,
		ReadHeaderTimeout: limits.readHeader, ReadTimeout: limits.read, WriteTimeout: limits.write, IdleTimeout: limits.idle,
		MaxHeaderBytes: limits.maxHeaderBytes,
		TLSNextProto:   map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:       log.New(connErrors{}, "", 0),
	}
}

// connErrors logs what net/http says of a connection it dropped (a TLS
// handshake that failed or timed out, one refused by the budget) at level
// 4: whoever opens connections would otherwise decide how much is logged.
type connErrors struct{}

func (connErrors) Write(p []byte) (int, error) {
	klog.V(4).InfoS("Dropped a connection", "reason", strings.TrimSpace(string(p)))
	return len(p), nil
}

// serveOn serves on a listener.
func serveOn(server *http.Server, listener net.Listener) error {
	if server.TLSConfig != nil {
		return server.ServeTLS(listener, "", "")
	}
	return server.Serve(listener)
}
