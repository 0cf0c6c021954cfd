package election_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
)

var leasesResource = coordinationv1.SchemeGroupVersion.WithResource("leases")

// leaseServer serves the Lease through client-go's fake clientset, whose
// reactors keep it in an object tracker. A tracker neither sets nor checks
// resourceVersion, and both electors rely on the API server's optimistic
// concurrency to keep two candidates from taking one lease: the reactors
// give every write a new resourceVersion and refuse an update of another
// one (409), as the API server does; the tracker itself refuses to create
// a lease twice (409 AlreadyExists). The tracker is a plain one: the
// clientset's own manages fields, building a RESTMapper on every update,
// milliseconds each.
type leaseServer struct {
	clientset *fake.Clientset
	tracker   k8stesting.ObjectTracker

	mu      sync.Mutex
	version int
	// landed is when each holder's last write landed, on the bubble's
	// clock: a standby counts the lease from no earlier. "" is a release.
	landed map[string]time.Time
}

func newLeaseServer() *leaseServer {
	s := &leaseServer{
		clientset: fake.NewClientset(),
		tracker:   k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder()),
		landed:    map[string]time.Time{},
	}
	s.clientset.PrependReactor("get", "leases", k8stesting.ObjectReaction(s.tracker))
	s.clientset.PrependReactor("create", "leases", s.create)
	s.clientset.PrependReactor("update", "leases", s.update)
	return s
}

func (s *leaseServer) create(action k8stesting.Action) (bool, runtime.Object, error) {
	lease := action.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	lease.ResourceVersion = strconv.Itoa(s.version)
	if err := s.tracker.Create(leasesResource, lease, action.GetNamespace()); err != nil {
		return true, nil, err
	}
	s.land(lease)
	return true, lease.DeepCopy(), nil
}

func (s *leaseServer) update(action k8stesting.Action) (bool, runtime.Object, error) {
	lease := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.tracker.Get(leasesResource, action.GetNamespace(), lease.Name)
	if err != nil {
		return true, nil, err
	}
	if stored.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
		return true, nil, apierrors.NewConflict(leasesResource.GroupResource(), lease.Name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	s.version++
	lease.ResourceVersion = strconv.Itoa(s.version)
	if err := s.tracker.Update(leasesResource, lease, action.GetNamespace()); err != nil {
		return true, nil, err
	}
	s.land(lease)
	return true, lease.DeepCopy(), nil
}

func (s *leaseServer) land(lease *coordinationv1.Lease) {
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	s.landed[holder] = time.Now()
}

// lastWrite is when holder's last write landed; zero if none did.
func (s *leaseServer) lastWrite(holder string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landed[holder]
}

// fault is how a candidate's link to the API server fails.
type fault int

const (
	healthy fault = iota
	// refused: the API server answers 500 and nothing lands.
	refused
	// hanging: no answer until the request's context ends (or the fault
	// does), and nothing lands: a partition that TCP does not report.
	hanging
	// answerLost: the request lands but its answer does not come back.
	answerLost
)

func (f fault) String() string {
	return [...]string{"healthy", "refused", "hanging", "answer lost"}[f]
}

// link is one candidate's connection to the lease server, which a fault
// breaks for a while. It serves both electors: ours takes it as Leases,
// client-go's LeaseLock as its LeasesGetter. The embedded fake carries the
// calls neither elector makes.
type link struct {
	coordinationv1client.LeaseInterface

	mu    sync.Mutex
	fault fault
	until time.Time
}

var (
	_ election.Leases                   = (*link)(nil)
	_ coordinationv1client.LeasesGetter = (*link)(nil)
)

func (s *leaseServer) link(namespace string) *link {
	return &link{LeaseInterface: s.clientset.CoordinationV1().Leases(namespace)}
}

// Leases is the link itself: the election's lease lives in one namespace.
func (l *link) Leases(string) coordinationv1client.LeaseInterface { return l }

// breakFor makes the link fail with f for d from now.
func (l *link) breakFor(f fault, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fault, l.until = f, time.Now().Add(d)
}

func (l *link) current() (fault, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !time.Now().Before(l.until) {
		return healthy, time.Time{}
	}
	return l.fault, l.until
}

// call sends a request over the link: send reaches the server, unless the
// fault keeps it from it.
func call[T any](ctx context.Context, l *link, send func() (T, error)) (T, error) {
	var none T
	switch f, until := l.current(); f {
	case refused:
		return none, apierrors.NewInternalError(errors.New("injected: the API server failed"))
	case hanging:
		select {
		case <-ctx.Done():
			return none, ctx.Err()
		case <-time.After(time.Until(until)):
			return none, apierrors.NewTimeoutError("injected: no answer", 0)
		}
	case answerLost:
		_, _ = send()
		return none, apierrors.NewTimeoutError("injected: the answer was lost", 0)
	}
	return send()
}

func (l *link) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Get(ctx, name, opts) })
}

func (l *link) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Create(ctx, lease, opts) })
}

func (l *link) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return call(ctx, l, func() (*coordinationv1.Lease, error) { return l.LeaseInterface.Update(ctx, lease, opts) })
}

// skewedClock reads the bubble's clock offset by a constant: the clock of
// a node set wrong. Its timers run at the bubble's rate, so durations
// measured on it are true.
type skewedClock struct {
	clock.RealClock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// The lease server keeps the API server's optimistic concurrency, on which
// both electors' safety rests.
func TestInteropLeaseServerEnforcesResourceVersions(t *testing.T) {
	ctx := t.Context()
	leases := newLeaseServer().link(metav1.NamespaceDefault)
	holder := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: interopLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name},
		}
	}
	created, err := leases.Create(ctx, holder("a"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = leases.Create(ctx, holder("b"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "a second create: %v", err)

	update := holder("b")
	update.ResourceVersion = created.ResourceVersion
	updated, err := leases.Update(ctx, update, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, created.ResourceVersion, updated.ResourceVersion, "a write bumps the version")
	read, err := leases.Get(ctx, interopLease, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, updated, read)

	stale := holder("c")
	stale.ResourceVersion = created.ResourceVersion
	_, err = leases.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "an update of a stale version: %v", err)
	read, err = leases.Get(ctx, interopLease, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", *read.Spec.HolderIdentity)
}
