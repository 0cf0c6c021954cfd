package main

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/version"
)

// apiClients are the controller's clients. Each has its own rate limit, so
// that events, however many a storm brings, never delay a remediation. The
// leader election's lease and the reviews of the metrics port's callers
// have clients of their own too, which their packages make from config.
// The built-in kinds (Nodes, Leases, Events) are spoken in protobuf:
// decoding an 11 KB Node from it costs a fraction of JSON, and the node
// informer decodes every heartbeat. No clientset is built: client-go's
// registers every API group at start (kubeclient).
type apiClients struct {
	// kube reads and writes built-in kinds (nodes, leases).
	kube *kubeclient.Clients
	// events records events, within --events-qps and --events-burst.
	events *kubeclient.Clients
	// nhc reads and writes NodeHealthChecks, in JSON as custom resources are.
	nhc remediationclient.RemediationV1alpha1Interface
	// dynamic writes remediation resources of any kind, in JSON.
	dynamic dynamic.Interface
	// config is what they share, for the clients made elsewhere.
	config *rest.Config
}

// connect builds the clients from --kubeconfig or the in-cluster
// configuration.
func connect(opts *options) (*apiClients, error) {
	config, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the client configuration: %w", err)
	}
	config.QPS, config.Burst = opts.qps, opts.burst
	config.UserAgent = "nhc-controller/" + version.Get()
	return newClients(config, opts)
}

// newClients returns the clients. Responses are not compressed: the
// controller runs next to the API server, and inflating the node watch
// stream costs a fifth of the CPU of every heartbeat.
func newClients(config *rest.Config, opts *options) (*apiClients, error) {
	config = rest.CopyConfig(config)
	config.DisableCompression = true
	config.Wrap(kubeclient.ServerTimeouts)
	events := rest.CopyConfig(config)
	events.QPS, events.Burst = opts.eventsQPS, opts.eventsBurst
	c := apiClients{config: config}
	var err error
	if c.kube, err = kubeclient.New(config); err != nil {
		return nil, err
	}
	if c.events, err = kubeclient.New(events); err != nil {
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
