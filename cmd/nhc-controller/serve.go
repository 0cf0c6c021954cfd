package main

import (
	"errors"
	"net/http"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/serving"
)

// servingConfig says where the ports listen: the metrics port over HTTPS
// unless --metrics-secure=false.
func (o *options) servingConfig() serving.Config {
	return serving.Config{
		MetricsAddress: o.metricsAddress, ProbeAddress: o.probeAddress,
		MetricsTLS: o.metricsSecure, TLSCertFile: o.tlsCertFile, TLSKeyFile: o.tlsKeyFile,
	}
}

// metricsHandler serves /metrics, and /debug/pprof/ with --profiling, to
// authorized callers unless --metrics-secure=false. Their reviews go
// through clients of their own (apiClients).
func metricsHandler(opts *options, apis *apiClients) http.Handler {
	if !opts.metricsSecure {
		return serving.MetricsHandler(opts.profiling)
	}
	return serving.ProtectedMetricsHandler(opts.profiling, reviewsOver(apis.reviews), reviewsOver(apis.refreshes))
}

// reviewsOver asks for reviews over c.
func reviewsOver(c *kubeclient.Clients) serving.ReviewClient {
	return serving.ReviewClient{Tokens: c.TokenReviews(), Access: c.SubjectAccessReviews()}
}

// probes serves /healthz, the process and, with leader election, the lease
// renewal, failing once a leader has not renewed for the lease duration
// plus tolerance; and /readyz, whether this replica is ready: its caches
// synced and, with leader election, it leads or knows who does.
func probes(synced func() bool, elector *election.Elector, tolerance time.Duration) http.Handler {
	healthy := func() error {
		if elector == nil {
			return nil
		}
		return elector.Check(tolerance)
	}
	ready := func() error {
		switch {
		case !synced():
			return errors.New("caches have not synced")
		case elector != nil && !elector.IsLeader() && elector.GetLeader() == "":
			return errors.New("no leader known yet")
		}
		return nil
	}
	return serving.ProbesHandler(healthy, ready)
}
