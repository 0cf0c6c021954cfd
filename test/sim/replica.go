package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// The flags the simulated controller runs with: the binary's defaults, but
// node leases short enough that a history sees them end.
const (
	workers           = 2
	nodeLeaseDuration = 2 * time.Minute
	nodeLeaseBuffer   = 10 * time.Second
	// renewDeadline is the leader-election renew deadline: a leader that
	// cannot renew stops writing after it, and exits.
	renewDeadline = 10 * time.Second
	// leaderLeaseDuration is how long a standby waits for an unrenewed
	// leader-election lease before it takes over.
	leaderLeaseDuration = 15 * time.Second
	leaseNamespace      = nodeleases.DefaultNamespace
)

// replica is one controller process, wired as cmd/nhc-controller wires it,
// against the simulated API server. Leader election is simulated by its
// effect on writes: the replica writes only until its last renewal plus
// the renew deadline (controller.Config.WritesUntil), and a replica that cannot
// renew exits, as the binary does.
type replica struct {
	name   string
	cancel context.CancelFunc
	// stopped is closed once every goroutine of the replica ended.
	stopped chan struct{}
	// partitionedAt is when it was cut off the API server; zero while it
	// is not: until then it renewed its leader-election lease.
	partitionedAt time.Time
	// healsAt ends the partition.
	healsAt time.Time
}

// startReplica starts a controller process; it leads from now.
func (s *sim) startReplica() (*replica, error) {
	s.replicaCount++
	r := &replica{name: fmt.Sprintf("replica-%d", s.replicaCount), stopped: make(chan struct{})}
	// JSON only: the simulated API server speaks no protobuf (the node
	// cache falls back to JSON, decoded into the same nodeview.Node).
	config := &rest.Config{Host: "http://kube-apiserver.sim", Transport: s.server.Transport(r.name), QPS: 100, Burst: 2000,
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}}
	kube, err := kubeclient.New(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	nhcClient, err := remediationclient.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	logger := logr.Discard()
	if s.trace != nil {
		logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(4), textlogger.Output(traceWriter(s.tracef))))
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger.WithName(r.name)))
	r.cancel = cancel
	nodeInformer, err := nodecache.NewInformer(config, 100*time.Millisecond)
	if err != nil {
		cancel()
		return nil, err
	}
	nhcInformer, err := controller.NewNodeHealthCheckInformer(config)
	if err != nil {
		cancel()
		return nil, err
	}
	leases := nodeleases.New(kube.Leases(leaseNamespace), nodeleases.NewAccess(nodeleases.AccessClientsOf(kube, leaseNamespace), leaseNamespace, nodeleases.DefaultRole),
		leaseNamespace, nodeLeaseDuration, nodeLeaseBuffer, clock.RealClock{})
	observer, writer, err := remediation.New(remediation.Config{Context: ctx, Dynamic: dyn, NodeClient: kube.Nodes(), RESTConfig: config,
		Leases: leases, Access: kube.SelfSubjectAccessReviews(), Clock: clock.RealClock{}})
	if err != nil {
		cancel()
		return nil, err
	}
	ctrl, err := controller.New(ctx, controller.Config{
		Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: nhcClient,
		Observer: observer, Changes: observer, Writer: writer, Leases: leases, LeaseChanges: leases,
		Recorder: &record.FakeRecorder{}, Clock: clock.RealClock{}, StatusBytes: s.statusBytes,
		WritesUntil: func() (time.Time, error) { return r.writesUntil() },
		CheckQuiet:  func(nhc string, err error) { s.locked(func() { s.check.QuietLeftOut(nhc, err) }) },
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go nodeInformer.Informer().RunWithContext(ctx)
	go nhcInformer.Informer().RunWithContext(ctx)
	leasesStopped := make(chan struct{})
	go func() {
		defer close(leasesStopped)
		leases.Run(ctx)
	}()
	go func() {
		defer close(r.stopped)
		_ = ctrl.Run(ctx, workers)
		<-leasesStopped
	}()
	return r, nil
}

var errNotLeading = errors.New("the leader-election lease was not renewed within the renew deadline")

// writesUntil is the replica's write deadline, as the binary's lease tracker
// gives it.
func (r *replica) writesUntil() (time.Time, error) {
	renewed := time.Now()
	if !r.partitionedAt.IsZero() {
		renewed = r.partitionedAt
	}
	until := renewed.Add(renewDeadline)
	if !time.Now().Before(until) {
		return time.Time{}, errNotLeading
	}
	return until, nil
}

// stop ends the process: a crash loses everything it kept in memory, and
// its requests in flight never land.
func (s *sim) stop(r *replica) {
	r.cancel()
	s.server.DropClient(r.name)
	for {
		select {
		case <-r.stopped:
			return
		default:
		}
		s.settleFor(r.name)
		select {
		case <-r.stopped:
			return
		case <-time.After(time.Second):
		}
	}
}

// traceWriter writes a controller's log lines into the trace.
type traceWriter func(format string, args ...any)

func (w traceWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
