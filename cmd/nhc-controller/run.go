package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/restclient" // rest_client_* metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"  // workqueue_* metrics
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
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

func run(ctx context.Context, opts *options) error {
	ports, err := serving.Bind(opts.servingConfig())
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
	metrics, err := registerMetrics()
	if err != nil {
		return err
	}
	// Events and deletes yield to remediation creates: a storm's creates
	// go first at the API server.
	yield := controller.NewYield(clock.RealClock{})
	recorder, stopRecording := recordEvents(ctx, apis, yield)
	defer stopRecording()

	// Nodes and NodeHealthChecks are watched on every replica, so that a new
	// leader starts with warm caches. Nothing needs a periodic resync.
	// Nodes are decoded as health.Nodes, straight from protobuf.
	// NodeHealthChecks are decoded one at a time, so that one that cannot be
	// decoded is reported alone instead of failing the list of all.
	nodeInformer, err := nodecache.NewInformer(apis.config, opts.nodeBatchWindow)
	if err != nil {
		return err
	}
	nhcInformer := controller.NewNodeHealthCheckInformer(apis.dynamic)
	leases, leaseAccess := nodeLeases(opts, apis.kube)
	observer, writer, err := remediationRooms(ctx, apis, nodeInformer, leases)
	if err != nil {
		return err
	}
	cfg := controller.Config{
		Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: apis.nhc,
		Observer: observer, Changes: observer, Writer: writer,
		Recorder: recorder, Metrics: metrics, Clock: clock.RealClock{}, Yield: yield,
	}
	if leases != nil {
		cfg.Leases, cfg.LeaseChanges = leases, leases
	}
	elected, err := elect(ctx, opts, apis)
	if err != nil {
		return err
	}
	if elected != nil {
		cfg.WritesUntil = elected.elector.WritesUntil
	}
	ctrl, err := controller.New(ctx, cfg)
	if err != nil {
		return err
	}
	go nodeInformer.Informer().RunWithContext(ctx)
	if leases != nil {
		stopped := runNodeLeases(ctx, leases, leaseAccess)
		defer func() {
			cancel()
			<-stopped
		}()
	}
	go nhcInformer.Informer().RunWithContext(ctx)

	ports.Metrics.Serve(ctx, metricsHandler(opts, apis))
	if elected == nil {
		ports.Probes.Serve(ctx, probes(ctrl.CachesSynced, nil, 0))
		return ctrl.Run(ctx, opts.workers)
	}
	ports.Probes.Serve(ctx, probes(ctrl.CachesSynced, elected.elector, opts.renewDeadline))
	return elected.run(func(ctx context.Context) error { return ctrl.Run(ctx, opts.workers) })
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

// nodeLeases are the node leases and the controller's access to their
// namespace, nil without --node-leases.
func nodeLeases(opts *options, kubeClient *kubeclient.Clients) (*nodeleases.Keeper, *nodeleases.Access) {
	if !opts.nodeLeases {
		return nil, nil
	}
	// Node leases live in one namespace; kube-node-lease, with a lease
	// per node renewed every 10 seconds, is never watched.
	// The controller's rights on leases are bound in that namespace
	// alone, at start, before the informer lists it.
	access := nodeleases.NewAccess(nodeleases.AccessClientsOf(kubeClient, opts.leaseNamespace), opts.leaseNamespace, opts.nodeLeaseRole)
	return nodeleases.New(kubeClient.Leases(opts.leaseNamespace), access,
		opts.leaseNamespace, opts.nodeLeaseDuration, opts.nodeLeaseBuffer, clock.RealClock{}), access
}

// runNodeLeases binds the controller's rights in the lease namespace and
// runs the node leases until ctx ends; stopped is closed once they have.
func runNodeLeases(ctx context.Context, leases *nodeleases.Keeper, access *nodeleases.Access) (stopped <-chan struct{}) {
	access.Start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		leases.Run(ctx)
	}()
	return done
}

// remediationRooms builds the two rooms of the remediation resources on
// the shared informers. Template kinds resolve through discovery, which
// notices CRDs installed later.
func remediationRooms(ctx context.Context, apis *apiClients, nodeInformer *nodecache.Informer, leases *nodeleases.Keeper) (*remediation.Observer, *remediation.Writer, error) {
	metadataOnly, err := remediation.NewMetadataOnlyClient(apis.config)
	if err != nil {
		return nil, nil, err
	}
	return remediation.New(remediation.Config{Context: ctx, Dynamic: apis.dynamic, MetadataOnly: metadataOnly,
		NodeClient: apis.kube.Nodes(), RESTConfig: apis.config, Nodes: nodeInformer.Lister(), Leases: leaseReader(leases), Clock: clock.RealClock{}})
}

// leaseReader is the node leases' reader, nil when the controller takes
// none.
func leaseReader(leases *nodeleases.Keeper) remediation.LeaseReader {
	if leases == nil {
		return nil
	}
	return leases
}
