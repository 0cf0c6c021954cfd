package main

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
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

// apiClients are the controller's clients. Each has its own rate limit, so
// that events, however many a storm brings, never delay a remediation, and
// nothing a caller of the metrics endpoint does (each new bearer token is a
// TokenReview) ever delays the leader's lease renewal.
// The built-in kinds (Nodes, Leases, Events) are spoken in protobuf:
// decoding an 11 KB Node from it costs a fraction of JSON, and the node
// informer decodes every heartbeat. No clientset is built: client-go's
// registers every API group at start (kubeclient).
type apiClients struct {
	// kube reads and writes built-in kinds (nodes, leases).
	kube *kubeclient.Clients
	// events records events, within --events-qps and --events-burst.
	events *kubeclient.Clients
	// reviews asks the API server to authenticate and authorize the
	// callers of the metrics endpoint, within reviewQPS and reviewBurst;
	// refreshes reviews again the answers that let a caller in, within
	// refreshQPS and refreshBurst, so that a flood waits on reviews alone.
	reviews, refreshes *kubeclient.Clients
	// nhc reads and writes NodeHealthChecks, in JSON as custom resources are.
	nhc remediationclient.RemediationV1alpha1Interface
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
	if c.kube, err = kubeclient.New(config); err != nil {
		return nil, err
	}
	if c.events, err = kubeclient.New(events); err != nil {
		return nil, err
	}
	if c.reviews, err = kubeclient.New(reviews); err != nil {
		return nil, err
	}
	if c.refreshes, err = kubeclient.New(refreshes); err != nil {
		return nil, err
	}
	if c.nhc, err = remediationclient.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, err
	}
	return &c, nil
}
