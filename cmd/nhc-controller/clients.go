package main

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
)

// apiClients are the controller's clients. Each has its own rate limit, so
// that events, however many a storm brings, never delay a remediation, and
// nothing a caller of the metrics endpoint does (each new bearer token is a
// TokenReview) ever delays the leader's lease renewal.
// client-go's typed clients speak protobuf for built-in kinds already
// (Nodes, Leases, Events): decoding an 11 KB Node from it costs a fraction of
// JSON, and the node informer decodes every heartbeat.
type apiClients struct {
	// kube reads and writes built-in kinds (nodes, leases).
	kube kubernetes.Interface
	// events records events, within --events-qps and --events-burst.
	events kubernetes.Interface
	// election renews the leader-election lease, and nothing else.
	election kubernetes.Interface
	// reviews asks the API server to authenticate and authorize the
	// callers of the metrics endpoint, within reviewQPS and reviewBurst;
	// refreshes reviews again the answers that let a caller in, within
	// refreshQPS and refreshBurst, so that a flood waits on reviews alone.
	reviews, refreshes kubernetes.Interface
	// nhc reads and writes NodeHealthChecks, in JSON as custom resources are.
	nhc versioned.Interface
	// dynamic writes remediation resources of any kind, in JSON.
	dynamic dynamic.Interface
	// config is what they share, for the node informer's own client.
	config *rest.Config
}

// newClients returns the clients. Responses are not compressed: the
// controller runs next to the API server, and inflating the node watch
// stream costs a fifth of the CPU of every heartbeat.
func newClients(config *rest.Config, opts *options) (*apiClients, error) {
	config = rest.CopyConfig(config)
	config.DisableCompression = true
	config.Wrap(serverTimeouts)
	events := rest.CopyConfig(config)
	events.QPS, events.Burst = opts.eventsQPS, opts.eventsBurst
	reviews := rest.CopyConfig(config)
	reviews.QPS, reviews.Burst = reviewQPS, reviewBurst
	refreshes := rest.CopyConfig(config)
	refreshes.QPS, refreshes.Burst = refreshQPS, refreshBurst
	c := apiClients{config: config}
	var err error
	if c.kube, err = kubernetes.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.events, err = kubernetes.NewForConfig(events); err != nil {
		return nil, err
	}
	// A rate limiter of its own: the lease is renewed every retry period.
	if c.election, err = kubernetes.NewForConfig(rest.CopyConfig(config)); err != nil {
		return nil, err
	}
	if c.reviews, err = kubernetes.NewForConfig(reviews); err != nil {
		return nil, err
	}
	if c.refreshes, err = kubernetes.NewForConfig(refreshes); err != nil {
		return nil, err
	}
	if c.nhc, err = versioned.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, err
	}
	return &c, nil
}
