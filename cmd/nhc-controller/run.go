package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // rest_client_* metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue_* metrics
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
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

func run(ctx context.Context, opts *options) error {
	listening, err := bindPorts(opts)
	if err != nil {
		return err
	}
	defer listening.close()
	// Whatever ends run ends what it started: an error after the informers
	// started must not wait for a signal to be reported.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	config, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	config.QPS, config.Burst = opts.qps, opts.burst
	config.UserAgent = "nhc-controller/" + version.Get()
	apis, err := newClients(config, opts)
	if err != nil {
		return err
	}
	kubeClient, nhcClient, dynamicClient := apis.kube, apis.nhc, apis.dynamic

	metrics := controller.NewMetrics()
	if err := metrics.Register(legacyregistry.Registerer()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	metrics.SetBuildInfo(version.Get())
	if err := nhcscheme.AddToScheme(kubeclient.Scheme); err != nil {
		return err
	}
	// One NodeHealthCheck speaks for many nodes: client-go's default spam
	// filter (25 events per object, then one per 5 minutes) would drop the
	// events of a mass failure, storm recovery's among them.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize: eventBurst, QPS: eventQPS,
	}))
	broadcaster.StartStructuredLogging(4)
	// Events and deletes yield to remediation creates: a storm's creates
	// go first at the API server.
	yield := controller.NewYield(clock.RealClock{})
	broadcaster.StartRecordingToSink(yield.EventSink(kubeclient.EventSink{Clients: apis.events}))
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(kubeclient.Scheme, corev1.EventSource{Component: eventComponent})

	// Nodes and NodeHealthChecks are watched on every replica, so that a new
	// leader starts with warm caches. Nothing needs a periodic resync.
	// Nodes are decoded as health.Nodes, straight from protobuf.
	// NodeHealthChecks are decoded one at a time, so that one that cannot be
	// decoded is reported alone instead of failing the list of all.
	nodeInformer, err := nodecache.NewInformer(apis.config, opts.nodeBatchWindow)
	if err != nil {
		return err
	}
	nhcInformer := controller.NewNodeHealthCheckInformer(dynamicClient)
	var leases *nodeleases.Keeper
	var leaseAccess *nodeleases.Access
	if opts.nodeLeases {
		// Node leases live in one namespace; kube-node-lease, with a lease
		// per node renewed every 10 seconds, is never watched.
		// The controller's rights on leases are bound in that namespace
		// alone, at start, before the informer lists it.
		leaseAccess = nodeleases.NewAccess(nodeleases.AccessClientsOf(kubeClient, opts.leaseNamespace), opts.leaseNamespace, opts.nodeLeaseRole)
		leases = nodeleases.New(kubeClient.Leases(opts.leaseNamespace), leaseAccess,
			opts.leaseNamespace, opts.nodeLeaseDuration, opts.nodeLeaseBuffer, clock.RealClock{})
	}
	// Template kinds resolve through discovery, which notices CRDs
	// installed later.
	metadataOnly, err := remediation.NewMetadataOnlyClient(apis.config)
	if err != nil {
		return err
	}
	observer, writer, err := remediation.New(remediation.Config{Context: ctx, Dynamic: dynamicClient, MetadataOnly: metadataOnly,
		NodeClient: kubeClient.Nodes(), RESTConfig: apis.config, Nodes: nodeInformer.Lister(), Leases: leaseReader(leases), Clock: clock.RealClock{}})
	if err != nil {
		return err
	}
	cfg := controller.Config{
		Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: nhcClient,
		Observer: observer, Changes: observer, Writer: writer,
		Recorder: recorder, Metrics: metrics, Clock: clock.RealClock{}, Yield: yield,
	}
	if leases != nil {
		cfg.Leases, cfg.LeaseChanges = leases, leases
	}
	var elected *leadership
	if opts.leaderElect {
		lease, err := electionLeases(apis, opts.leaderElectionNamespace)
		if err != nil {
			return err
		}
		if elected, err = newLeadership(ctx, opts, lease); err != nil {
			return err
		}
		cfg.WritesUntil = elected.elector.WritesUntil
	}
	ctrl, err := controller.New(ctx, cfg)
	if err != nil {
		return err
	}
	go nodeInformer.Informer().RunWithContext(ctx)
	if leases != nil {
		leaseAccess.Start(ctx)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			leases.Run(ctx)
		}()
		defer func() {
			cancel()
			<-stopped
		}()
	}
	go nhcInformer.Informer().RunWithContext(ctx)

	listening.metrics.serve(ctx, metricsHandler(opts, apis))
	if !opts.leaderElect {
		listening.probes.serve(ctx, probes(ctrl.CachesSynced, nil, 0))
		return ctrl.Run(ctx, opts.workers)
	}
	listening.probes.serve(ctx, probes(ctrl.CachesSynced, elected.elector, opts.renewDeadline))
	return elected.run(func(ctx context.Context) error { return ctrl.Run(ctx, opts.workers) })
}

// leaseReader is the node leases' reader, nil when the controller takes
// none.
func leaseReader(leases *nodeleases.Keeper) remediation.LeaseReader {
	if leases == nil {
		return nil
	}
	return leases
}

// metricsHandler serves /metrics, and /debug/pprof/ with --profiling, to
// authorized callers unless --metrics-secure=false.
func metricsHandler(opts *options, apis *apiClients) http.Handler {
	mux := metricsMux(opts.profiling)
	if !opts.metricsSecure {
		return mux
	}
	return routedFirst(mux, protectMetrics(apis, trustedOnceAuthorized(mux)))
}

// probes serves /healthz (the process and, with leader election, the lease
// renewal, failing once a leader has not renewed for the lease duration plus
// tolerance) and /readyz.
func probes(synced func() bool, elector *election.Elector, tolerance time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if elector != nil {
			if err := elector.Check(tolerance); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", readiness(synced, elector))
	return mux
}
