package serving

import (
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
)

// The rate limits of the clients that review the callers of the metrics
// port: those without a cached answer, and, apart, the answers that let a
// caller in, reviewed again ahead of their expiry.
const (
	reviewQPS    = 20
	reviewBurst  = 40
	refreshQPS   = 5
	refreshBurst = 10
)

// reviewClients are the clients of the reviews, each with a rate limiter of
// its own, whatever api carries: nothing a caller of the metrics port does
// (each new bearer token is a TokenReview) ever delays the controller's
// writes or the leader's lease renewal, and a flood waits on reviews alone
// while the answers that let a caller in are reviewed again on refreshes.
func reviewClients(api *rest.Config) (reviews, refreshes ReviewClient, err error) {
	if reviews, err = reviewClient(api, reviewQPS, reviewBurst); err != nil {
		return ReviewClient{}, ReviewClient{}, err
	}
	if refreshes, err = reviewClient(api, refreshQPS, refreshBurst); err != nil {
		return ReviewClient{}, ReviewClient{}, err
	}
	return reviews, refreshes, nil
}

func reviewClient(api *rest.Config, qps float32, burst int) (ReviewClient, error) {
	config := rest.CopyConfig(api)
	config.RateLimiter, config.QPS, config.Burst = nil, qps, burst
	c, err := kubeclient.New(config)
	if err != nil {
		return ReviewClient{}, err
	}
	return ReviewClient{Tokens: c.TokenReviews(), Access: c.SubjectAccessReviews()}, nil
}
