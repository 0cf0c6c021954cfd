package kubeclient

import (
	"context"
	"net/http"
	"time"
)

// ServerTimeouts tells the API server how long each write may take, with
// the timeout parameter: what remains of its context. A write's context
// ends when the leader can no longer show that it holds the lease; without
// the parameter, the API server would carry out a write the client gave up
// on, up to its own 60 s, after a new leader took over. It wraps a
// config's transport: config.Wrap(ServerTimeouts).
func ServerTimeouts(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		deadline, ok := req.Context().Deadline()
		if !ok || req.Method == http.MethodGet || req.Method == http.MethodHead || req.URL.Query().Has("timeout") {
			return rt.RoundTrip(req)
		}
		remaining := time.Until(deadline).Truncate(time.Millisecond)
		if remaining <= 0 {
			return nil, context.DeadlineExceeded
		}
		req = req.Clone(req.Context())
		query := req.URL.Query()
		query.Set("timeout", remaining.String())
		req.URL.RawQuery = query.Encode()
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
