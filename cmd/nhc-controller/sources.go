package main

import (
	"context"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// sources are what the controller reads and takes, built and not started:
// the informers of nodes and NodeHealthChecks, the two rooms of the
// remediation resources, and the node leases (nil without --node-leases).
type sources struct {
	nodes            *nodecache.Informer
	nodeHealthChecks controller.NodeHealthCheckInformer
	observer         *remediation.Observer
	writer           *remediation.Writer
	leases           *nodeleases.Keeper
	leaseAccess      *nodeleases.Access
}

// newSources builds the sources. Nodes and NodeHealthChecks are watched on
// every replica, so that a new leader starts with warm caches. Nothing
// needs a periodic resync. Nodes are decoded as health.Nodes, straight
// from protobuf. NodeHealthChecks are decoded one at a time, so that one
// that cannot be decoded is reported alone instead of failing the list of
// all.
func newSources(ctx context.Context, opts *options, apis *apiClients) (*sources, error) {
	nodes, err := nodecache.NewInformer(apis.config, opts.nodeBatchWindow)
	if err != nil {
		return nil, err
	}
	nodeHealthChecks, err := controller.NewNodeHealthCheckInformer(apis.config)
	if err != nil {
		return nil, err
	}
	s := &sources{nodes: nodes, nodeHealthChecks: nodeHealthChecks}
	s.leases, s.leaseAccess = nodeLeases(opts, apis.kube)
	if s.observer, s.writer, err = remediationRooms(ctx, apis, s.leases); err != nil {
		return nil, err
	}
	return s, nil
}

// controllerConfig hands each seam to the controller once.
func (s *sources) controllerConfig(apis *apiClients, recorder record.EventRecorder, metrics *controller.Metrics,
	yield *controller.Yield, leading *election.Leadership) controller.Config {
	cfg := controller.Config{
		Nodes: s.nodes, NodeHealthChecks: s.nodeHealthChecks, Client: apis.nhc,
		Observer: s.observer, Changes: s.observer, Writer: s.writer,
		Recorder: recorder, Metrics: metrics, Clock: clock.RealClock{}, Yield: yield,
		WritesUntil: leading.WritesUntil,
	}
	if s.leases != nil {
		cfg.Leases, cfg.LeaseChanges = s.leases, s.leases
	}
	return cfg
}

// start runs the informers and, with --node-leases, binds the controller's
// rights in the lease namespace and runs the node leases, until ctx ends;
// stopped is closed once the node leases have stopped.
func (s *sources) start(ctx context.Context) (stopped <-chan struct{}) {
	done := make(chan struct{})
	go s.nodes.Informer().RunWithContext(ctx)
	if s.leases != nil {
		s.leaseAccess.Start(ctx)
		go func() {
			defer close(done)
			s.leases.Run(ctx)
		}()
	} else {
		close(done)
	}
	go s.nodeHealthChecks.Informer().RunWithContext(ctx)
	return done
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

// remediationRooms builds the two rooms of the remediation resources on
// the shared informers. Template kinds resolve through discovery, which
// notices CRDs installed later.
func remediationRooms(ctx context.Context, apis *apiClients, leases *nodeleases.Keeper) (*remediation.Observer, *remediation.Writer, error) {
	metadataOnly, err := remediation.NewMetadataOnlyClient(apis.config)
	if err != nil {
		return nil, nil, err
	}
	return remediation.New(remediation.Config{Context: ctx, Dynamic: apis.dynamic, MetadataOnly: metadataOnly,
		NodeClient: apis.kube.Nodes(), RESTConfig: apis.config, Leases: leaseReader(leases), Access: apis.kube.SelfSubjectAccessReviews(), Clock: clock.RealClock{}})
}

// leaseReader is the node leases' reader, nil when the controller takes
// none.
func leaseReader(leases *nodeleases.Keeper) remediation.LeaseReader {
	if leases == nil {
		return nil
	}
	return leases
}
