package serving

import (
	"net/http"
	"net/http/pprof"
	"net/url"
	"path"
	runtimepprof "runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
)

// MetricsHandler serves /metrics, and with Profiling /debug/pprof/: without
// MetricsTLS to anyone, only behind a network policy; with it, to callers
// whose bearer token a TokenReview authenticates and whose user a
// SubjectAccessReview allows the request's verb on its path
// (delegatedAuth). The reviews go through clients of their own, made from
// api (reviewClients), so that a flood of callers delays no write.
func (c *Config) MetricsHandler(api *rest.Config) (http.Handler, error) {
	mux := metricsMux(c.Profiling)
	if !c.MetricsTLS {
		return mux, nil
	}
	reviews, refreshes, err := reviewClients(api)
	if err != nil {
		return nil, err
	}
	return routedFirst(mux, newDelegatedAuth(reviews, refreshes, trustedOnceAuthorized(mux), clock.RealClock{})), nil
}

// metricsMux serves /metrics, and with profiling the pprof index and each
// profile by its exact path: no subtree, so that the paths served are a
// fixed few (routedFirst).
func metricsMux(profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler())
	if profiling {
		mux.HandleFunc("/debug/pprof/{$}", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		for _, p := range runtimepprof.Profiles() {
			mux.Handle("/debug/pprof/"+p.Name(), pprof.Handler(p.Name()))
		}
	}
	return mux
}

// processStart is when the process started, as the exposition's header
// tells it.
var processStart = time.Now()

// metricsHandler serves the registry as legacyregistry.Handler does, but
// uncompressed: a scrape that asks for gzip, as Prometheus's do, takes a
// gzip writer of about 800 KB, anew once two collections have emptied its
// pool, to compress an exposition of some 60 KB: at 10,000 nodes, a
// twentieth of the live heap, for each scrape.
func metricsHandler() http.Handler {
	return promhttp.InstrumentMetricHandler(prometheus.DefaultRegisterer,
		promhttp.HandlerFor(legacyregistry.DefaultGatherer, promhttp.HandlerOpts{ProcessStartTime: processStart, DisableCompression: true}))
}

// routedFirst answers 404 to a path the mux does not serve exactly before
// anyone is authenticated or authorized: each distinct path would otherwise
// cost a SubjectAccessReview and an entry in the access cache, and any
// token could send thousands. Another spelling of a served path
// (/x/../metrics, //metrics) is not served either: the mux would redirect
// it, after its review.
func routedFirst(mux *http.ServeMux, protected http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" || !isClean(r.URL) {
			http.NotFound(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

// isClean tells whether a URL's path is as path.Clean spells it (a
// trailing slash kept), with no escapes.
func isClean(u *url.URL) bool {
	if u.RawPath != "" {
		return false
	}
	cleaned := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && cleaned != "/" {
		cleaned += "/"
	}
	return cleaned == u.Path
}
