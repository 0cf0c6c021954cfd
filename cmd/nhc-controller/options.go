package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/pkg/serving"
)

type options struct {
	kubeconfig string
	workers    int
	qps        float32
	burst      int
	// nodeBatchWindow paces the node watch's reads once synced: updates
	// arriving within it are handled in one wake-up.
	nodeBatchWindow time.Duration
	// eventsQPS and eventsBurst limit the event client alone.
	eventsQPS   float32
	eventsBurst int

	election election.Options
	serving  serving.Config

	// nodeLeases takes upstream's node leases before remediating, shared
	// with the other medik8s operators.
	nodeLeases     bool
	leaseNamespace string
	// nodeLeaseRole is the ClusterRole the controller binds to itself in
	// the lease namespace, when it may not use leases there yet.
	nodeLeaseRole     string
	nodeLeaseDuration time.Duration
	nodeLeaseBuffer   time.Duration
}

// maxNodeBatchWindow bounds how much later than it could a node update may
// be seen, and how slowly a watch may be read: at 300ms, paced reads keep
// up with a steady 12 MiB/s, twenty times what 10,000 nodes send; at 1s
// they fall behind 3 MiB/s.
const maxNodeBatchWindow = 300 * time.Millisecond

func defaultOptions() *options {
	return &options{
		workers: 2, qps: 100, burst: 2000, eventsQPS: 20, eventsBurst: 10,
		nodeBatchWindow: 300 * time.Millisecond,
		election:        election.DefaultOptions(), serving: serving.DefaultConfig(),
		nodeLeases: true, leaseNamespace: nodeleases.Namespace(), nodeLeaseRole: nodeleases.DefaultRole,
		nodeLeaseDuration: health.DefaultLeaseDuration, nodeLeaseBuffer: health.DefaultLeaseBuffer,
	}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to a kubeconfig. Without it, the in-cluster configuration is used.")
	fs.IntVar(&o.workers, "workers", o.workers, "NodeHealthChecks synced in parallel.")
	fs.Float32Var(&o.qps, "kube-api-qps", o.qps, "Queries per second to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", o.burst, "Burst of queries to the API server.")
	fs.DurationVar(&o.nodeBatchWindow, "node-batch-window", o.nodeBatchWindow, "Once the node cache has synced, node updates that arrive within this window after a read are read together, in one wake-up of the process: a heartbeat costs less than half the CPU at 50 a second, and an update is seen up to this much later while they arrive faster than one per window. While a remediation may be due, updates are read as they arrive. 0 always reads each as it arrives.")
	fs.Float32Var(&o.eventsQPS, "events-qps", o.eventsQPS, "Events recorded per second; events have their own client, so that they never delay a remediation.")
	fs.IntVar(&o.eventsBurst, "events-burst", o.eventsBurst, "Burst of events recorded.")
	o.election.AddFlags(fs)
	o.serving.AddFlags(fs)
	fs.BoolVar(&o.nodeLeases, "node-leases", o.nodeLeases, "Take a node's Lease before remediating it, as upstream NodeHealthCheck and node-maintenance-operator do, so that they never act on one node at once. false only where no other medik8s operator runs.")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", o.leaseNamespace, "Namespace of the node leases. Defaults to $"+nodeleases.NamespaceEnv+", else "+nodeleases.DefaultNamespace+".")
	fs.StringVar(&o.nodeLeaseRole, "node-lease-role", o.nodeLeaseRole, "ClusterRole with the rights on leases that the controller binds to itself in the lease namespace, so that it reads no lease elsewhere; empty binds none, where you grant leases there yourself.")
	fs.DurationVar(&o.nodeLeaseDuration, "node-lease-duration", o.nodeLeaseDuration, "How long a remediation without an escalation timeout holds its node's lease before renewing it; it is overdue, and times out, after 3 of them.")
	fs.DurationVar(&o.nodeLeaseBuffer, "node-lease-buffer", o.nodeLeaseBuffer, "Added to every node lease duration.")
}

func (o *options) validate() error {
	switch {
	case o.workers < 1:
		return fmt.Errorf("--workers must be at least 1, not %d", o.workers)
	case o.qps <= 0 || o.burst < 1 || o.eventsQPS <= 0 || o.eventsBurst < 1:
		return fmt.Errorf("--kube-api-qps, --kube-api-burst, --events-qps and --events-burst must be positive")
	case o.nodeBatchWindow < 0 || o.nodeBatchWindow > maxNodeBatchWindow:
		return fmt.Errorf("--node-batch-window must be between 0 and %s, not %s", maxNodeBatchWindow, o.nodeBatchWindow)
	}
	if err := o.serving.Validate(); err != nil {
		return err
	}
	if o.nodeLeases && (o.nodeLeaseDuration < time.Second || o.nodeLeaseBuffer < 0 || o.leaseNamespace == "") {
		return fmt.Errorf("node leases need --node-lease-duration of at least 1s, a --node-lease-buffer that is not negative and a --lease-namespace")
	}
	return o.election.Validate()
}
