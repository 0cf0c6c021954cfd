// Package election elects a leader among replicas on a coordination.k8s.io/v1
// Lease, as client-go's tools/leaderelection does with a LeaseLock.
//
// client-go's package imports its clientset's scheme, which registers every
// built-in API group at start: several MiB resident for groups the
// controller never reads. This package needs three calls on one namespace's
// leases and keeps client-go's algorithm: a candidate takes a lease that is
// free, or whose record it has seen unchanged for the lease's duration on
// its own clock (never trusting the record's timestamps, written by another
// clock); the leader renews every retry period and gives up once a renewal
// has not succeeded within the renew deadline, counted from when its last
// successful renewal began (client-go counts from that renewal's answer).
//
// Leadership runs a process's work while it leads, drained before the
// lease is released; Options are its flags.
package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// JitterFactor spreads the candidates' attempts, as client-go's does.
const JitterFactor = 1.2

// Leases are the calls the election makes on one namespace's leases: the
// generic typed lease client and client-go's (or its fake) both have them.
type Leases interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// Callbacks tell the caller of leadership changes.
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine once the lease is taken;
	// its context ends when leading does.
	OnStartedLeading func(context.Context)
	// OnStoppedLeading runs when Run returns, whether or not it led.
	OnStoppedLeading func()
	// OnNewLeader, optional, runs in its own goroutine for each holder
	// observed that differs from the last told: "" for a released lease
	// another replica left, never for this one's own release.
	OnNewLeader func(identity string)
}

// Config is an election's lease, candidate and timing.
type Config struct {
	// Leases reaches the lease's namespace.
	Leases Leases
	// Namespace and Name are the lease's; Name also labels the metric.
	Namespace, Name string
	// Identity is this candidate's, unique among the replicas.
	Identity string
	// LeaseDuration is how long a candidate waits, from the last change it
	// observed, before it takes the lease over; the leader writes it into
	// the lease, in whole seconds.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader retries a renewal before it
	// gives up; it also bounds WritesUntil.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between attempts.
	RetryPeriod time.Duration
	// ReleaseOnCancel releases the lease when Run's context ends while
	// leading. The caller must have stopped all guarded work by then.
	ReleaseOnCancel bool
	Callbacks       Callbacks
	// Clock is the real one when nil.
	Clock clock.WithDelayedExecution
}

// Elector runs one candidate's election.
type Elector struct {
	cfg   Config
	clock clock.WithDelayedExecution
	// jitter spreads the candidates' attempts; tests set none.
	jitter float64

	// lease is the last one read or written: the next Update's base, so
	// that a write on a lease changed meanwhile conflicts. Run's alone.
	lease *coordinationv1.Lease
	// reported is the last holder told to OnNewLeader. Run's alone.
	reported string

	mu sync.Mutex
	// observed is the last record seen, observedAt when it last changed on
	// this replica's clock: expiry is measured from there.
	observed   record
	observedAt time.Time
	seen       bool
	// renewedAt is when the last successful write of this candidate's own
	// record began; renewFailed is set by a failed one, and by giving up.
	renewedAt   time.Time
	renewFailed bool
}

// New checks a config and returns its elector.
func New(cfg Config) (*Elector, error) {
	switch {
	case cfg.Leases == nil || cfg.Name == "" || cfg.Identity == "":
		return nil, errors.New("leader election needs leases, a lease name and an identity")
	case cfg.LeaseDuration < time.Second:
		return nil, errors.New("the lease duration must be at least 1s: it is written in whole seconds")
	case cfg.LeaseDuration <= cfg.RenewDeadline:
		return nil, errors.New("the lease duration must be longer than the renew deadline")
	case cfg.RetryPeriod <= 0 || cfg.RenewDeadline <= time.Duration(JitterFactor*float64(cfg.RetryPeriod)):
		return nil, fmt.Errorf("the renew deadline must be longer than %v × a positive retry period", JitterFactor)
	case cfg.Callbacks.OnStartedLeading == nil || cfg.Callbacks.OnStoppedLeading == nil:
		return nil, errors.New("leader election needs OnStartedLeading and OnStoppedLeading")
	}
	e := &Elector{cfg: cfg, clock: cfg.Clock, jitter: JitterFactor}
	if e.clock == nil {
		e.clock = clock.RealClock{}
	}
	registerMetrics()
	leaderGauge.WithLabelValues(cfg.Name).Set(0)
	return e, nil
}

// Identity is this candidate's.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Run takes part in the election until ctx ends or, having led, until it
// stops leading. A leader whose renewals failed does not release the lease:
// its work may still be stopping, and it lapses on its own.
func (e *Elector) Run(ctx context.Context) {
	defer e.cfg.Callbacks.OnStoppedLeading()
	if !e.acquire(ctx) {
		return
	}
	leading, stop := context.WithCancel(ctx)
	defer stop()
	go e.cfg.Callbacks.OnStartedLeading(leading)
	lost := e.renew(leading)
	stop()
	leaderGauge.WithLabelValues(e.cfg.Name).Set(0)
	if !lost && e.cfg.ReleaseOnCancel {
		e.release(klog.NewContext(context.Background(), klog.FromContext(ctx)))
	}
}

// acquire tries to take the lease every retry period, jittered, until it
// does (true) or ctx ends (false).
func (e *Elector) acquire(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	logger.Info("Attempting to acquire leader lease...", "lock", e.describe())
	for ctx.Err() == nil {
		ok := e.tryAcquireOrRenew(ctx)
		e.reportTransition()
		if ok {
			leaderGauge.WithLabelValues(e.cfg.Name).Set(1)
			logger.Info("Successfully acquired lease", "lock", e.describe())
			return true
		}
		logger.V(4).Info("Failed to acquire lease", "lock", e.describe())
		pause := e.cfg.RetryPeriod
		if e.jitter > 0 {
			pause = wait.Jitter(pause, e.jitter)
		}
		if !e.sleep(ctx, pause) {
			break
		}
	}
	return false
}

// renew renews the lease every retry period until ctx ends (false) or a
// renewal has not succeeded within the renew deadline (true: lost).
//
// The deadline runs from when the next renewal was due, counted from when
// the last successful one began, not from its answer: a standby counts the
// lease from a change it saw, which is no earlier than that write's start,
// so a slow answer must not lengthen this term past the standbys' count.
// client-go counts from the answer.
func (e *Elector) renew(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	for e.sleep(ctx, e.cfg.RetryPeriod) {
		round, cancel := e.withDeadline(ctx, e.cfg.RetryPeriod+e.cfg.RenewDeadline-e.clock.Since(e.lastRenewalBegan()))
		ok := e.renewRound(round)
		cancel()
		e.reportTransition()
		switch {
		case ok:
			logger.V(5).Info("Successfully renewed lease", "lock", e.describe())
		case ctx.Err() != nil:
			return false
		default:
			e.mu.Lock()
			e.renewFailed = true
			e.mu.Unlock()
			leaderGauge.WithLabelValues(e.cfg.Name).Set(0)
			logger.Info("Failed to renew lease", "lock", e.describe(), "err", "timed out after the renew deadline "+e.cfg.RenewDeadline.String())
			return true
		}
	}
	return false
}

// renewRound retries a renewal every retry period until it succeeds or ctx
// ends.
func (e *Elector) renewRound(ctx context.Context) bool {
	for ctx.Err() == nil {
		if e.tryAcquireOrRenew(ctx) {
			return true
		}
		if !e.sleep(ctx, e.cfg.RetryPeriod) {
			break
		}
	}
	return false
}

// release writes an empty holder with a one-second duration, so that a
// standby takes over at once, if the lease is still this candidate's.
func (e *Elector) release(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ctx, cancel := e.withDeadline(ctx, e.cfg.RenewDeadline)
	defer cancel()
	for ctx.Err() == nil {
		lease, err := e.cfg.Leases.Get(ctx, e.cfg.Name, metav1.GetOptions{})
		if err != nil {
			logger.Error(err, "Cannot read the lease to release it", "lock", e.describe())
			return
		}
		current := recordOf(&lease.Spec)
		if current.holder != e.cfg.Identity {
			return
		}
		e.lease = lease
		now := micro(e.clock.Now())
		released := record{durationSeconds: 1, transitions: current.transitions, acquire: now, renew: now}
		err = e.write(ctx, released, now, false)
		switch {
		case err == nil:
			return
		case apierrors.IsConflict(err):
			// A renewal whose answer the cancellation cut off may have
			// landed: read the lease again.
			logger.V(4).Info("Conflict when releasing lease, retrying", "lock", e.describe())
		default:
			logger.Error(err, "Failed to release lease", "lock", e.describe())
			return
		}
	}
}

// reportTransition tells OnNewLeader of a holder not told yet.
func (e *Elector) reportTransition() {
	holder := e.GetLeader()
	if holder == e.reported {
		return
	}
	e.reported = holder
	if e.cfg.Callbacks.OnNewLeader != nil {
		go e.cfg.Callbacks.OnNewLeader(holder)
	}
}

// sleep waits d on the elector's clock; false when ctx ended first.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	t := e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// withDeadline ends ctx after d on the elector's clock, cutting off a
// request in flight as client-go's timeout does; at once when d is not
// positive.
func (e *Elector) withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if d <= 0 {
		cancel()
		return ctx, cancel
	}
	t := e.clock.AfterFunc(d, cancel)
	return ctx, func() {
		t.Stop()
		cancel()
	}
}

func (e *Elector) describe() string { return e.cfg.Namespace + "/" + e.cfg.Name }
