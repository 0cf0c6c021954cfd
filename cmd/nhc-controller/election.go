package main

import (
	"context"
	"os"
	"sync"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
)

// elect joins the leader election; nil without --leader-elect.
func elect(ctx context.Context, opts *options, apis *apiClients) (*leadership, error) {
	if !opts.leaderElect {
		return nil, nil
	}
	lease, err := electionLeases(apis, opts.leaderElectionNamespace)
	if err != nil {
		return nil, err
	}
	return newLeadership(ctx, opts, lease)
}

// electionLeases reaches the leader-election lease over a client with a
// rate limiter of its own: the lease is renewed every retry period, however
// busy the other clients are.
func electionLeases(apis *apiClients, namespace string) (election.Leases, error) {
	c, err := kubeclient.New(rest.CopyConfig(apis.config))
	if err != nil {
		return nil, err
	}
	return c.Leases(namespace), nil
}

// leadership is this replica's part in the leader election: the workers
// run while it leads. On SIGTERM the workers drain first, and only then is
// the lease released, so that the next leader never acts beside a sync
// still in flight.
type leadership struct {
	elector *election.Elector
	// stopping is run's context, which SIGTERM ends.
	stopping context.Context
	// electing outlives SIGTERM until the workers drained.
	electing    context.Context
	endElection context.CancelFunc
	logger      klog.Logger

	mu      sync.Mutex
	work    func(context.Context) error
	workErr error
	led     bool
}

func newLeadership(ctx context.Context, opts *options, leases election.Leases) (*leadership, error) {
	hostname, _ := os.Hostname()
	l := &leadership{stopping: ctx, logger: klog.FromContext(ctx)}
	l.electing, l.endElection = context.WithCancel(context.WithoutCancel(ctx))
	identity := hostname + "_" + uuid.NewString()
	elector, err := election.New(election.Config{
		Leases: leases, Namespace: opts.leaderElectionNamespace, Name: opts.leaderElectionID, Identity: identity,
		LeaseDuration: opts.leaseDuration, RenewDeadline: opts.renewDeadline, RetryPeriod: opts.retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: election.Callbacks{
			OnStartedLeading: l.lead,
			OnStoppedLeading: l.stopped,
			OnNewLeader: func(current string) {
				if current != identity && current != "" {
					l.logger.Info("Another replica leads", "leader", current)
				}
			},
		},
	})
	if err != nil {
		l.endElection()
		return nil, err
	}
	l.elector = elector
	return l, nil
}

// lead runs the workers until SIGTERM or the lease is lost, then ends the
// election, which releases the lease after a SIGTERM.
func (l *leadership) lead(leading context.Context) {
	l.logger.Info("Became the leader", "identity", l.elector.Identity())
	l.mu.Lock()
	l.led = true
	work := l.work
	l.mu.Unlock()
	workCtx, stopWork := context.WithCancel(l.stopping)
	defer stopWork()
	go func() {
		// Losing the lease stops the work at once.
		<-leading.Done()
		stopWork()
	}()
	err := work(workCtx)
	l.mu.Lock()
	l.workErr = err
	l.mu.Unlock()
	l.endElection()
}

// stopped ends the process when the lease was lost rather than released.
func (l *leadership) stopped() {
	if l.stopping.Err() == nil {
		l.logger.Info("Lost the lease; stopping", "identity", l.elector.Identity())
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	l.mu.Lock()
	led := l.led
	l.mu.Unlock()
	if led {
		l.logger.Info("Released the lease", "identity", l.elector.Identity())
	}
}

// run takes part in the election, with work run while leading, until the
// work ends, or SIGTERM comes to a replica that does not lead.
func (l *leadership) run(work func(context.Context) error) error {
	defer l.endElection()
	l.mu.Lock()
	l.work = work
	l.mu.Unlock()
	go func() {
		<-l.stopping.Done()
		if !l.elector.IsLeader() {
			l.endElection()
		}
	}()
	l.elector.Run(l.electing)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.workErr
}
