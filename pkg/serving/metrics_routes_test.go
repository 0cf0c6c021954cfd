package serving

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/clock"
)

// A path the metrics server does not serve is answered 404 before any
// review: a valid token over thousands of distinct paths costs the API
// server nothing. The paths it serves are reviewed as before.
func TestUnservedPathsCostNoReview(t *testing.T) {
	client, reviews := reviewingClient(nil)
	mux := metricsMux(true)
	handler := routedFirst(mux, newDelegatedAuth(over(client), over(client), mux, clock.RealClock{}))
	get := func(path string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer nobody")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}
	for _, path := range []string{"/a", "/metrics/x", "/debug/pprof/nothing", "/debug/pprof/heap/x",
		"/7/../metrics", "//metrics", "/./metrics", "/%6detrics", "/debug/pprof//heap", "/debug/pprof/./"} {
		assert.Equal(t, http.StatusNotFound, get(path), path)
	}
	assert.Zero(t, *reviews, "no review for a path not served")

	assert.Equal(t, http.StatusForbidden, get("/metrics"), "a served path is reviewed")
	assert.Equal(t, http.StatusForbidden, get("/debug/pprof/heap"))
	assert.Equal(t, http.StatusForbidden, get("/debug/pprof/"))
	assert.Positive(t, *reviews)
}

// A scrape that asks for gzip, as Prometheus's do, gets the exposition
// uncompressed, with the registry's metrics.
func TestMetricsAreServedUncompressed(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	w := httptest.NewRecorder()
	metricsMux(false).ServeHTTP(w, r)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Header().Get("Content-Encoding"))
	assert.Contains(t, w.Body.String(), "\ngo_goroutines ")
}
