package election

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// Both the generic typed client and client-go's fake satisfy Leases.
var (
	_ Leases = (*gentype.ClientWithList[*coordinationv1.Lease, *coordinationv1.LeaseList])(nil)
	_ Leases = fake.NewClientset().CoordinationV1().Leases("")
)

const (
	testNamespace = "nhc-system"
	me            = "me"
	other         = "other"
)

var leasesResource = coordinationv1.Resource("leases")

// fakeLeases holds one lease as the API server does: each write bumps its
// resourceVersion, and an update of another version conflicts. Calls fail
// with fail[verb] while it is set.
type fakeLeases struct {
	mu    sync.Mutex
	lease *coordinationv1.Lease
	rv    int
	fail  map[string]error
	calls []string
	// answered, when set, runs once after the next update lands and before
	// its answer returns: a slow answer steps a fake clock.
	answered func()
}

func newFakeLeases(initial *record) *fakeLeases {
	f := &fakeLeases{fail: map[string]error{}}
	if initial != nil {
		f.set(*initial)
	}
	return f
}

func (f *fakeLeases) call(verb string) error {
	f.calls = append(f.calls, verb)
	return f.fail[verb]
}

func (f *fakeLeases) Get(_ context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("get"); err != nil {
		return nil, err
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leasesResource, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, lease *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create"); err != nil {
		return nil, err
	}
	if f.lease != nil {
		return nil, apierrors.NewAlreadyExists(leasesResource, lease.Name)
	}
	f.store(lease.DeepCopy())
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Update(_ context.Context, lease *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update"); err != nil {
		return nil, err
	}
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leasesResource, lease.Name)
	}
	if lease.ResourceVersion != f.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leasesResource, lease.Name, nil)
	}
	f.store(lease.DeepCopy())
	if f.answered != nil {
		f.answered()
		f.answered = nil
	}
	return f.lease.DeepCopy(), nil
}

// answerLate makes the next update's answer come after d on clk, the
// write having landed when it began.
func (f *fakeLeases) answerLate(clk *clocktesting.FakeClock, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answered = func() { clk.Step(d) }
}

func (f *fakeLeases) store(lease *coordinationv1.Lease) {
	f.rv++
	lease.ResourceVersion = strconv.Itoa(f.rv)
	f.lease = lease
}

// set writes the lease as another replica would.
func (f *fakeLeases) set(r record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "lease"}}
	if f.lease != nil {
		lease = f.lease.DeepCopy()
	}
	lease.Spec = r.spec()
	f.store(lease)
}

// touch changes the lease's metadata alone, as a label edit would.
func (f *fakeLeases) touch() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store(f.lease.DeepCopy())
}

func (f *fakeLeases) record() record {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease == nil {
		return record{}
	}
	return recordOf(&f.lease.Spec)
}

func (f *fakeLeases) failing(verbs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = map[string]error{}
	for _, v := range verbs {
		f.fail[v] = apierrors.NewServiceUnavailable("down")
	}
}

// takeCalls returns the calls since the last take.
func (f *fakeLeases) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

func (f *fakeLeases) count(verb string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == verb {
			n++
		}
	}
	return n
}

var start = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)

// Durations as the controller's defaults.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// newTestElector elects on leases with a fake clock and no jitter; name
// keeps each test's metric series apart.
func newTestElector(t *testing.T, name string, leases *fakeLeases, callbacks Callbacks) (*Elector, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	if callbacks.OnStartedLeading == nil {
		callbacks.OnStartedLeading = func(context.Context) {}
	}
	if callbacks.OnStoppedLeading == nil {
		callbacks.OnStoppedLeading = func() {}
	}
	e, err := New(Config{
		Leases: leases, Namespace: testNamespace, Name: name, Identity: me,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: true, Callbacks: callbacks, Clock: clk,
	})
	require.NoError(t, err)
	e.jitter = 0
	return e, clk
}
