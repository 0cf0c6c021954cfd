package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
)

// protobufWithFallback asks the API server for protobuf, which built-in kinds
// speak, and accepts JSON: decoding a Node from protobuf costs a fraction of
// decoding it from JSON, and the node informer decodes every heartbeat.
const protobufWithFallback = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// apiClients are the controller's clients. Each has its own rate limit, so
// that events, however many a storm brings, never delay a remediation.
type apiClients struct {
	// kube reads and writes built-in kinds (nodes, leases) in protobuf.
	kube kubernetes.Interface
	// events records events, in protobuf, within --events-qps and
	// --events-burst.
	events kubernetes.Interface
	// nhc reads and writes NodeHealthChecks, in JSON as custom resources are.
	nhc versioned.Interface
	// dynamic writes remediation resources of any kind, in JSON.
	dynamic dynamic.Interface
}

func newClients(config *rest.Config, opts *options) (*apiClients, error) {
	builtIn := rest.CopyConfig(config)
	builtIn.ContentType, builtIn.AcceptContentTypes = runtime.ContentTypeProtobuf, protobufWithFallback
	events := rest.CopyConfig(builtIn)
	events.QPS, events.Burst = opts.eventsQPS, opts.eventsBurst
	var c apiClients
	var err error
	if c.kube, err = kubernetes.NewForConfig(builtIn); err != nil {
		return nil, err
	}
	if c.events, err = kubernetes.NewForConfig(events); err != nil {
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
