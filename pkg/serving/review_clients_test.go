package serving

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The reviews and their refreshes each have a rate limiter of their own,
// apart from whatever the controller's config carries.
func TestTheReviewsHaveRateLimitersOfTheirOwn(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	reviews, refreshes, err := reviewClients(&rest.Config{Host: "https://example.invalid", RateLimiter: shared})
	require.NoError(t, err)
	limiter := func(c ReviewClient) flowcontrol.RateLimiter {
		return c.Tokens.(interface{ GetClient() rest.Interface }).GetClient().GetRateLimiter()
	}
	assert.NotSame(t, shared, limiter(reviews))
	assert.NotSame(t, shared, limiter(refreshes))
	assert.NotSame(t, limiter(reviews), limiter(refreshes))
	assert.Equal(t, float32(reviewQPS), limiter(reviews).QPS())
	assert.Equal(t, float32(refreshQPS), limiter(refreshes).QPS())
}

// Without MetricsTLS the metrics are served to anyone; with it, a caller
// is reviewed by the API server api names. pprof is served with Profiling
// alone.
func TestTheMetricsAreProtectedUnlessMetricsTLSIsOff(t *testing.T) {
	var reviewed atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/authentication.k8s.io/v1/tokenreviews" {
			reviewed.Add(1)
		}
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer api.Close()
	get := func(handler http.Handler, path string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer someone")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}

	plain := Config{}
	handler, err := plain.MetricsHandler(nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, get(handler, "/metrics"))
	assert.Equal(t, http.StatusNotFound, get(handler, "/debug/pprof/"), "no profiling")

	protected := Config{MetricsTLS: true, Profiling: true}
	handler, err = protected.MetricsHandler(&rest.Config{Host: api.URL})
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, get(handler, "/metrics"))
	assert.Equal(t, http.StatusUnauthorized, get(handler, "/debug/pprof/"))
	assert.Positive(t, reviewed.Load(), "the token was reviewed by the API server")
}
