package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // rest_client_* metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue_* metrics
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/serving"
	"github.com/nodehealthcheck/nhc-controller/pkg/version"
)

// eventComponent is the source of the controller's events, as upstream's.
const eventComponent = "NodeHealthCheck"

// eventBurst and eventQPS bound the events per NodeHealthCheck: a burst that
// covers a large storm, then one per second.
const (
	eventBurst = 1000
	eventQPS   = 1
)

// run binds the ports, connects, builds the controller and what it reads,
// starts them, serves the ports and runs the workers while this replica
// leads, until ctx ends or something fails.
func run(ctx context.Context, opts *options) error {
	ports, err := serving.Bind(opts.serving)
	if err != nil {
		return err
	}
	defer ports.Close()
	// Whatever ends run ends what it started: an error after the informers
	// started must not wait for a signal to be reported.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	apis, err := connect(opts)
	if err != nil {
		return err
	}
	metricsHandler, err := opts.serving.MetricsHandler(apis.config)
	if err != nil {
		return err
	}
	leading, err := opts.election.Leadership(ctx, apis.config)
	if err != nil {
		return err
	}
	metrics, err := registerMetrics()
	if err != nil {
		return err
	}
	// Events and deletes yield to remediation creates: a storm's creates
	// go first at the API server.
	yield := controller.NewYield(clock.RealClock{})
	recorder, stopRecording := recordEvents(ctx, apis, yield)
	defer stopRecording()
	src, err := newSources(ctx, opts, apis)
	if err != nil {
		return err
	}
	ctrl, err := controller.New(ctx, src.controllerConfig(apis, recorder, metrics, yield, leading))
	if err != nil {
		return err
	}
	stopped := src.start(ctx)
	defer func() {
		cancel()
		<-stopped
	}()
	ports.Metrics.Serve(ctx, metricsHandler)
	ports.Probes.Serve(ctx, probes(ctrl.CachesSynced, leading))
	return leading.Run(func(ctx context.Context) error { return ctrl.Run(ctx, opts.workers) })
}

// registerMetrics registers the controller's metrics in the registry
// /metrics serves, and the NodeHealthCheck kinds in the scheme events
// name their objects with.
func registerMetrics() (*controller.Metrics, error) {
	metrics := controller.NewMetrics()
	if err := metrics.Register(legacyregistry.Registerer()); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	metrics.SetBuildInfo(version.Get())
	if err := nhcscheme.AddToScheme(kubeclient.Scheme); err != nil {
		return nil, err
	}
	return metrics, nil
}

// recordEvents starts recording events on their own client, behind the
// remediation creates; stop flushes and ends it.
func recordEvents(ctx context.Context, apis *apiClients, yield *controller.Yield) (recorder record.EventRecorder, stop func()) {
	// One NodeHealthCheck speaks for many nodes: client-go's default spam
	// filter (25 events per object, then one per 5 minutes) would drop the
	// events of a mass failure, storm recovery's among them.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: eventBurst, QPS: eventQPS,
	}))
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(yield.EventSink(kubeclient.EventSink{Clients: apis.events}))
	return broadcaster.NewRecorder(kubeclient.Scheme, corev1.EventSource{Component: eventComponent}), broadcaster.Shutdown
}

// probes serves /healthz, the process and, with leader election, the lease
// renewal; and /readyz, whether this replica is ready: its caches synced
// and it leads or knows who does.
func probes(synced func() bool, leading *election.Leadership) http.Handler {
	return serving.ProbesHandler(leading.Healthy, func() error {
		if !synced() {
			return errors.New("caches have not synced")
		}
		return leading.Ready()
	})
}
