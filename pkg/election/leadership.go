package election

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Leadership is this replica's part in the leader election: the work runs
// while it leads. When the process's context ends (SIGTERM), or the work
// ends on its own, the work has drained before the lease is released, so
// that the next leader never acts beside work still in flight. Losing the
// lease instead ends the process at once, as client-go's users do: the
// work may still be stopping.
type Leadership struct {
	// elector is nil for a replica that leads alone.
	elector *Elector
	// renewDeadline is the tolerance of Healthy.
	renewDeadline time.Duration
	// stopping is the process's context, which SIGTERM ends.
	stopping context.Context
	// electing outlives SIGTERM until the work drained.
	electing    context.Context
	endElection context.CancelFunc
	logger      klog.Logger

	mu      sync.Mutex
	work    func(context.Context) error
	workErr error
	led     bool
	// workEnded: the work ended while leading and before SIGTERM.
	workEnded bool
}

// Alone is the leadership of a replica without an election: it leads, from
// the start until ctx ends.
func Alone(ctx context.Context) *Leadership {
	return &Leadership{stopping: ctx, logger: klog.FromContext(ctx)}
}

// newLeadership joins the election of cfg; its Callbacks and
// ReleaseOnCancel are the leadership's own. ctx is the process's.
func newLeadership(ctx context.Context, cfg Config) (*Leadership, error) {
	l := &Leadership{stopping: ctx, logger: klog.FromContext(ctx), renewDeadline: cfg.RenewDeadline}
	l.electing, l.endElection = context.WithCancel(context.WithoutCancel(ctx))
	cfg.ReleaseOnCancel = true
	cfg.Callbacks = Callbacks{
		OnStartedLeading: l.lead,
		OnStoppedLeading: l.stopped,
		OnNewLeader: func(current string) {
			if current != cfg.Identity && current != "" {
				l.logger.Info("Another replica leads", "leader", current)
			}
		},
	}
	elector, err := New(cfg)
	if err != nil {
		l.endElection()
		return nil, err
	}
	l.elector = elector
	return l, nil
}

// Run takes part in the election, with work run while leading, until the
// work ends, or the process's context ends for a replica that does not
// lead. A replica alone runs the work at once.
func (l *Leadership) Run(work func(context.Context) error) error {
	if l.elector == nil {
		return work(l.stopping)
	}
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

// lead runs the work until SIGTERM or the lease is lost, then ends the
// election, which releases the lease after a SIGTERM.
func (l *Leadership) lead(leading context.Context) {
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
	l.workEnded = leading.Err() == nil && l.stopping.Err() == nil
	l.mu.Unlock()
	l.endElection()
}

// stopped ends the process when the lease was lost rather than released.
func (l *Leadership) stopped() {
	l.mu.Lock()
	led, workEnded := l.led, l.workEnded
	l.mu.Unlock()
	if l.stopping.Err() == nil && !workEnded {
		l.logger.Info("Lost the lease; stopping", "identity", l.elector.Identity())
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	if led {
		l.logger.Info("Released the lease", "identity", l.elector.Identity())
	}
}

// WritesUntil says until when the work may write (Elector.WritesUntil);
// zero, no end, for a replica alone.
func (l *Leadership) WritesUntil() (time.Time, error) {
	if l.elector == nil {
		return time.Time{}, nil
	}
	return l.elector.WritesUntil()
}

// Healthy fails once this replica leads but has not renewed the lease for
// its duration plus the renew deadline (Elector.Check): a liveness probe
// restarts it. A standby is not held to the lease.
func (l *Leadership) Healthy() error {
	if l.elector == nil {
		return nil
	}
	return l.elector.Check(l.renewDeadline)
}

// Ready fails until this replica leads or knows who does.
func (l *Leadership) Ready() error {
	if l.elector != nil && !l.elector.IsLeader() && l.elector.GetLeader() == "" {
		return errors.New("no leader known yet")
	}
	return nil
}
