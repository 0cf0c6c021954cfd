package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// inClusterNamespaceFile holds the pod's namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

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

	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration

	metricsAddress string
	// metricsSecure serves /metrics over HTTPS with delegated authentication
	// and authorization; false serves plain HTTP to anyone.
	metricsSecure bool
	tlsCertFile   string
	tlsKeyFile    string
	probeAddress  string
	// profiling serves Go's pprof under /debug/pprof/ beside /metrics, with
	// the same protection.
	profiling bool

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
		leaderElect:     true, leaderElectionID: "nhc-controller.remediation.medik8s.io",
		leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second,
		metricsAddress: ":8443", metricsSecure: true, probeAddress: ":8081",
		nodeLeases: true, leaseNamespace: nodeleases.Namespace(), nodeLeaseRole: nodeleases.DefaultRole,
		nodeLeaseDuration: health.DefaultLeaseDuration, nodeLeaseBuffer: health.DefaultLeaseBuffer,
	}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Path to a kubeconfig. Without it, the in-cluster configuration is used.")
	fs.IntVar(&o.workers, "workers", o.workers, "NodeHealthChecks synced in parallel.")
	fs.Float32Var(&o.qps, "kube-api-qps", o.qps, "Queries per second to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", o.burst, "Burst of queries to the API server.")
	fs.DurationVar(&o.nodeBatchWindow, "node-batch-window", o.nodeBatchWindow, "Once the node cache has synced, node updates that arrive within this window after a read are read together, in one wake-up of the process: a heartbeat costs less than half the CPU at 50 a second, and an update is seen up to this much later while they arrive faster than one per window. While some selected node is not healthy, updates are read as they arrive. 0 always reads each as it arrives.")
	fs.Float32Var(&o.eventsQPS, "events-qps", o.eventsQPS, "Events recorded per second; events have their own client, so that they never delay a remediation.")
	fs.IntVar(&o.eventsBurst, "events-burst", o.eventsBurst, "Burst of events recorded.")
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect, "Elect a leader among replicas with a Lease; only the leader acts.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", o.leaderElectionNamespace, "Namespace of the leader-election Lease. Defaults to the pod's namespace in a cluster, else default.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", o.leaderElectionID, "Name of the leader-election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", o.leaseDuration, "How long non-leaders wait before taking over an unrenewed lease.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", o.renewDeadline, "How long the leader retries renewing before it gives up leading.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", o.retryPeriod, "How often candidates try to acquire or renew the lease.")
	fs.StringVar(&o.metricsAddress, "metrics-bind-address", o.metricsAddress, "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", o.metricsSecure, "Serve /metrics over HTTPS to callers that a TokenReview authenticates and a SubjectAccessReview allows GET /metrics (ClusterRole nhc-controller-metrics-reader). false serves plain HTTP to anyone: only behind a network policy.")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", o.tlsCertFile, "Certificate of the HTTPS metrics server; without it a self-signed one is made at start.")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", o.tlsKeyFile, "Private key of --tls-cert-file.")
	fs.BoolVar(&o.profiling, "profiling", o.profiling, "Serve Go's pprof profiles under /debug/pprof/ on the metrics address, to callers allowed GET on that non-resource URL when --metrics-secure.")
	fs.StringVar(&o.probeAddress, "health-probe-bind-address", o.probeAddress, "Address of /healthz and /readyz; 0 disables them.")
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
	case (o.tlsCertFile == "") != (o.tlsKeyFile == ""):
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file go together")
	case o.nodeLeases && (o.nodeLeaseDuration < time.Second || o.nodeLeaseBuffer < 0 || o.leaseNamespace == ""):
		return fmt.Errorf("node leases need --node-lease-duration of at least 1s, a --node-lease-buffer that is not negative and a --lease-namespace")
	case o.leaderElect && !(o.retryPeriod < o.renewDeadline && o.renewDeadline < o.leaseDuration):
		return fmt.Errorf("leader election needs --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration")
	}
	if o.leaderElectionNamespace == "" {
		o.leaderElectionNamespace = "default"
		if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			o.leaderElectionNamespace = strings.TrimSpace(string(data))
		}
	}
	return nil
}
