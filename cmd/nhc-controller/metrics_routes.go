package main

import (
	"net/http"
	"net/http/pprof"
	runtimepprof "runtime/pprof"

	"k8s.io/component-base/metrics/legacyregistry"
)

// metricsMux serves /metrics, and with profiling the pprof index and each
// profile by its exact path: no subtree, so that the paths served are a
// fixed few (routedFirst).
func metricsMux(profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
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

// routedFirst answers 404 to a path the mux does not serve before anyone is
// authenticated or authorized: each distinct path would otherwise cost a
// SubjectAccessReview, and any token could send thousands (issue 30).
func routedFirst(mux *http.ServeMux, protected http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			http.NotFound(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}
