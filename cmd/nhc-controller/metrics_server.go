package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// serveTLS runs an HTTPS server until ctx ends, with the certificate given
// or, without one, a self-signed one made at start.
func serveTLS(ctx context.Context, name, address, certFile, keyFile string, handler http.Handler) error {
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
	server := &http.Server{
		Addr: address, Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	logger := klog.FromContext(ctx)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()
	go func() {
		logger.Info("Serving", "server", name, "address", address, "tls", true)
		if err := server.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name, "address", address)
		}
	}()
	return nil
}
