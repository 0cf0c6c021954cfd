package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// serverLimits bound what callers of the metrics and probe servers can take
// of the process: without them, idle connections stay open forever (1,000
// cost about 40 MiB), and a few thousand OOM-kill the pod.
type serverLimits struct {
	// readHeader bounds the time to send a request's headers, read its
	// whole request, write a response, and keep an idle connection open.
	readHeader, read, write, idle time.Duration
}

// probeLimits serve the kubelet, which opens a connection per probe, sends
// its request at once, and gives up after a second. No cap on connections:
// anyone on the pod network could fill it with silent connections, the
// kubelet's probes would wait behind them, and the pod would be killed
// (issue 30); a cap that closes the oldest silent connection instead is no
// better, as a peer that opens a new one as each closes churns through it
// faster than a probe's request arrives. The short timeouts bound what
// silent connections hold: each about 13 KiB for at most 2 s, as in
// kube-controller-manager and controller-runtime, whose probe servers have
// no cap either.
var probeLimits = serverLimits{readHeader: 2 * time.Second, read: 2 * time.Second, write: 5 * time.Second, idle: 2 * time.Second}

// metricsLimits serve Prometheus, which keeps a connection per target and
// scrapes every 15 to 60 seconds, and pprof, whose CPU profile writes
// after 30 seconds. No cap on connections, as on the probe port: 800 silent
// connections against a cap of 256 made Prometheus's scrapes wait until
// they timed out (issue 30). A silent connection, TLS handshake included,
// is closed after 5 s.
var metricsLimits = serverLimits{readHeader: 5 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: 90 * time.Second}

// serve runs an HTTP server until ctx ends; "0" disables it.
func serve(ctx context.Context, name, address string, limits serverLimits, handler http.Handler) error {
	return runServer(ctx, name, address, limits, nil, handler)
}

// serveTLS runs an HTTPS server until ctx ends, with the certificate given
// or, without one, a self-signed one made at start.
func serveTLS(ctx context.Context, name, address, certFile, keyFile string, limits serverLimits, handler http.Handler) error {
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
		return fmt.Errorf("the %s server's certificate: %w", name, err)
	}
	return runServer(ctx, name, address, limits, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, handler)
}

// runServer listens at once, so that a port in use fails the start, and
// serves until ctx ends.
func runServer(ctx context.Context, name, address string, limits serverLimits, tlsConfig *tls.Config, handler http.Handler) error {
	if address == "" || address == "0" {
		return nil
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("the %s server: %w", name, err)
	}
	server := newServer(limits, tlsConfig, handler)
	logger := klog.FromContext(ctx)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()
	go func() {
		logger.Info("Serving", "server", name, "address", listener.Addr().String(), "tls", tlsConfig != nil)
		if err := serveOn(server, listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name, "address", address)
		}
	}()
	return nil
}

// newServer serves HTTP/1.1 only: HTTP/2 multiplies the requests one
// connection carries (250 streams each), and
// neither the kubelet nor Prometheus needs it (controller-runtime turns it
// off on its metrics server for the same reason).
func newServer(limits serverLimits, tlsConfig *tls.Config, handler http.Handler) *http.Server {
	return &http.Server{
		Handler: handler, TLSConfig: tlsConfig,
		ReadHeaderTimeout: limits.readHeader, ReadTimeout: limits.read, WriteTimeout: limits.write, IdleTimeout: limits.idle,
		MaxHeaderBytes: 64 << 10,
		TLSNextProto:   map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
}

// serveOn serves on a listener. No cap on open connections: a cap queues
// or drops new ones, the kubelet's and Prometheus's among them, behind
// whoever fills it; the timeouts bound how long a silent one lasts.
func serveOn(server *http.Server, listener net.Listener) error {
	if server.TLSConfig != nil {
		return server.ServeTLS(listener, "", "")
	}
	return server.Serve(listener)
}
