package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// ErrRenewalFailed is why a leader whose last renewal failed does not write.
var ErrRenewalFailed = errors.New("the last renewal of the leader-election lease failed")

// record is what the election reads and writes of a lease's spec.
type record struct {
	holder                       string
	durationSeconds, transitions int32
	acquire, renew               time.Time
	preferredHolder, strategy    string
}

func recordOf(spec *coordinationv1.LeaseSpec) record {
	var r record
	if spec.HolderIdentity != nil {
		r.holder = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		r.durationSeconds = *spec.LeaseDurationSeconds
	}
	if spec.LeaseTransitions != nil {
		r.transitions = *spec.LeaseTransitions
	}
	if spec.AcquireTime != nil {
		r.acquire = spec.AcquireTime.Time
	}
	if spec.RenewTime != nil {
		r.renew = spec.RenewTime.Time
	}
	if spec.PreferredHolder != nil {
		r.preferredHolder = *spec.PreferredHolder
	}
	if spec.Strategy != nil {
		r.strategy = string(*spec.Strategy)
	}
	return r
}

// spec is the lease spec of a record written by this package, which sets
// neither a preferred holder nor a strategy, as client-go's LeaseLock.
func (r record) spec() coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{
		HolderIdentity:       &r.holder,
		LeaseDurationSeconds: &r.durationSeconds,
		LeaseTransitions:     &r.transitions,
		AcquireTime:          &metav1.MicroTime{Time: r.acquire},
		RenewTime:            &metav1.MicroTime{Time: r.renew},
	}
}

// equal compares to the microsecond, which is what a lease stores.
func (r record) equal(o record) bool {
	return r.holder == o.holder && r.durationSeconds == o.durationSeconds && r.transitions == o.transitions &&
		micro(r.acquire).Equal(micro(o.acquire)) && micro(r.renew).Equal(micro(o.renew)) &&
		r.preferredHolder == o.preferredHolder && r.strategy == o.strategy
}

func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// tryAcquireOrRenew takes the lease if it is free or expired, or renews it
// if it is this candidate's; true on success.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	now := micro(e.clock.Now())
	mine := record{
		holder: e.cfg.Identity, durationSeconds: int32(e.cfg.LeaseDuration / time.Second),
		acquire: now, renew: now,
	}
	// A leader renews on the lease it last wrote, without reading it:
	// a conflict means that someone else wrote, and it reads.
	if e.IsLeader() && e.valid(now) && e.lease != nil {
		held := e.observedRecord()
		mine.acquire, mine.transitions = held.acquire, held.transitions
		err := e.write(ctx, mine, now, false)
		if err == nil {
			return true
		}
		logger.V(2).Info("Failed to update lease optimistically, falling back to slow path", "lock", e.describe(), "err", err)
	}

	lease, err := e.cfg.Leases.Get(ctx, e.cfg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if err := e.write(ctx, mine, now, true); err != nil {
			logger.Error(err, "Error initially creating lease lock", "lock", e.describe())
			return false
		}
		return true
	case err != nil:
		logger.Error(err, "Error retrieving lease lock", "lock", e.describe())
		return false
	}
	e.lease = lease
	current := recordOf(&lease.Spec)
	e.observe(current)
	if current.holder != "" && current.holder != e.cfg.Identity && e.valid(now) {
		logger.V(4).Info("Lease is held and has not yet expired", "lock", e.describe(), "holder", current.holder)
		return false
	}
	if current.holder == e.cfg.Identity {
		mine.acquire, mine.transitions = current.acquire, current.transitions
		slowpathCounter.WithLabelValues(e.cfg.Name).Inc()
	} else {
		mine.transitions = current.transitions + 1
	}
	if err := e.write(ctx, mine, now, false); err != nil {
		logger.Error(err, "Failed to update lease", "lock", e.describe())
		return false
	}
	return true
}

// write creates the lease with r, or updates the last lease read or
// written. A write of this candidate's own record that began at began is
// a renewal: WritesUntil counts from its start, which the lease's expiry,
// on any replica, cannot precede.
func (e *Elector) write(ctx context.Context, r record, began time.Time, create bool) error {
	var written *coordinationv1.Lease
	var err error
	if create {
		written, err = e.cfg.Leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
			Spec:       r.spec(),
		}, metav1.CreateOptions{})
	} else {
		lease := e.lease.DeepCopy()
		lease.Spec = r.spec()
		written, err = e.cfg.Leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.holder == e.cfg.Identity {
		e.renewFailed = err != nil
		if err == nil {
			e.renewedAt = began
		}
	}
	if err != nil {
		return err
	}
	e.lease = written
	e.observed, e.observedAt, e.seen = r, e.clock.Now(), true
	return nil
}

// lastRenewalBegan is when the last successful write of this candidate's
// own record began.
func (e *Elector) lastRenewalBegan() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.renewedAt
}

// observe notes a record read; its time only if it changed.
func (e *Elector) observe(r record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen && e.observed.equal(r) {
		return
	}
	e.observed, e.observedAt, e.seen = r, e.clock.Now(), true
}

func (e *Elector) observedRecord() record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed
}

// valid tells whether the observed record's lease runs at now, counted
// from when this replica saw it change.
func (e *Elector) valid(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observedAt.Add(time.Duration(e.observed.durationSeconds) * time.Second).After(now)
}

// IsLeader tells whether the last observed holder is this candidate.
func (e *Elector) IsLeader() bool { return e.GetLeader() == e.cfg.Identity }

// GetLeader is the last observed holder, "" before any or after a release.
func (e *Elector) GetLeader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed.holder
}

// Check fails when this candidate leads but has seen no renewal for the
// lease duration plus tolerance: its renewals are stuck rather than failed,
// or it would have given up. A liveness probe restarts it.
func (e *Elector) Check(tolerance time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.observed.holder != e.cfg.Identity {
		return nil
	}
	if e.clock.Since(e.observedAt) > e.cfg.LeaseDuration+tolerance {
		return fmt.Errorf("failed election to renew leadership on lease %s", e.cfg.Name)
	}
	return nil
}

// WritesUntil tells until when this candidate may write: the renew deadline
// after its last renewal began, while it holds the lease and that renewal
// succeeded. A leader whose renewals fail stays leader for up to the renew
// deadline, while a standby may take the lease once it expires; the renew
// deadline is shorter than the lease, so writes end before.
func (e *Elector) WritesUntil() (time.Time, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch age := e.clock.Since(e.renewedAt); {
	case e.renewedAt.IsZero():
		return time.Time{}, errors.New("the leader-election lease was never acquired")
	case e.renewFailed:
		return time.Time{}, ErrRenewalFailed
	case e.observed.holder != e.cfg.Identity:
		return time.Time{}, errors.New("the leader-election lease is no longer this replica's")
	case age >= e.cfg.RenewDeadline:
		return time.Time{}, fmt.Errorf("the leader-election lease was last renewed %s ago, longer than the renew deadline %s",
			age.Round(time.Millisecond), e.cfg.RenewDeadline)
	}
	return e.renewedAt.Add(e.cfg.RenewDeadline), nil
}
