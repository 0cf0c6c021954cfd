package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// authWebhookBackoff retries TokenReviews and SubjectAccessReviews briefly,
// as the API server's own delegating filters do.
var authWebhookBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// protectMetrics wraps the metrics handler as kube-controller-manager and
// kube-scheduler protect theirs: the caller is authenticated with a
// TokenReview and authorized with a SubjectAccessReview for GET on the
// non-resource URL /metrics (the ClusterRole nhc-controller-metrics-reader
// grants it). No token is a 401, a token without the right a 403.
func protectMetrics(kubeClient kubernetes.Interface, handler http.Handler) (http.Handler, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  kubeClient.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &authWebhookBackoff,
		CacheTTL:                 2 * time.Minute,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("the metrics authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kubeClient.AuthorizationV1(),
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &authWebhookBackoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("the metrics authorizer: %w", err)
	}
	h := filters.WithAuthorization(handler, authz, scheme.Codecs)
	h = filters.WithAuthentication(h, authn, filters.Unauthorized(scheme.Codecs), nil, nil)
	return filters.WithRequestInfo(h, &request.RequestInfoFactory{
		APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api"),
	}), nil
}

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
