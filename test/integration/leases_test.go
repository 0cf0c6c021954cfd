package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// Node leases written while the lease informer is behind the real API
// server, as after a lease watch broke during an outage and client-go's
// back-off keeps it from listing again: each write the API server refuses
// for it (a conflict, a lease that exists or is gone) is made again from
// the lease read at the API server.
func TestNodeLeaseWritesSucceedWhileTheLeaseWatchIsBehind(t *testing.T) {
	const namespace, node, holder = "lagging-leases", "lagging-0", "NodeHealthCheck-lagging"
	_, err := kubeClient.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	leases := &blindableLeases{LeaseInterface: kubeClient.CoordinationV1().Leases(namespace)}
	keeper := nodeleases.New(leases, noAccess{}, namespace, time.Minute, time.Minute, clock.RealClock{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go keeper.Run(ctx)
	shown := func() *health.NodeLease {
		read, _, err := keeper.Read()
		if err != nil || read == nil {
			return nil
		}
		if lease, ok := read.ByNode[node]; ok {
			return &lease
		}
		return nil
	}
	stored := func() *coordinationv1.Lease {
		lease, err := leases.Get(t.Context(), health.LeaseName(node), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		require.NoError(t, err)
		return lease
	}
	request := health.LeaseRequest{Node: node, Holder: holder, Duration: time.Minute}

	require.NoError(t, keeper.Acquire(t.Context(), request), "taken")
	require.Eventually(t, func() bool { return shown() != nil }, 30*time.Second, 10*time.Millisecond, "the informer shows the lease")
	leases.blind.Store(true)
	taken := stored()

	require.NoError(t, keeper.Renew(t.Context(), request), "renewed from the version shown")
	renewed := stored()
	require.NotEqual(t, taken.ResourceVersion, renewed.ResourceVersion)
	require.NoError(t, keeper.Renew(t.Context(), request), "renewed again, the informer a version behind")
	assert.NotEqual(t, renewed.ResourceVersion, stored().ResourceVersion, "written")

	restart := request
	restart.Restart = true
	require.NoError(t, keeper.Acquire(t.Context(), restart), "taken anew, the informer two versions behind")
	assert.Equal(t, holder, ptr.Deref(stored().Spec.HolderIdentity, ""))

	require.NoError(t, keeper.Release(t.Context(), node, holder), "released, the informer three versions behind")
	assert.Nil(t, stored(), "deleted")

	require.NoError(t, keeper.Acquire(t.Context(), request), "taken again, the informer showing the lease deleted since")
	assert.Equal(t, holder, ptr.Deref(stored().Spec.HolderIdentity, ""))

	someoneElses := stored()
	someoneElses.Spec.HolderIdentity = ptr.To("node-maintenance-operator")
	someoneElses.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
	_, err = leases.Update(t.Context(), someoneElses, metav1.UpdateOptions{})
	require.NoError(t, err)
	err = keeper.Acquire(t.Context(), request)
	require.EqualError(t, err, "can't update or invalidate the lease because it is held by different owner: node-maintenance-operator",
		"someone else's lease, unseen by the informer, is not taken")
	assert.NotEmpty(t, keeper.Problem(err), "it holds the node")
	assert.NotNil(t, shown(), "the informer still shows the lease as it was")
}

// blindableLeases are a namespace's leases whose watches deliver nothing
// once blind.
type blindableLeases struct {
	coordinationclient.LeaseInterface
	blind atomic.Bool
}

func (b *blindableLeases) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := b.LeaseInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return e, !b.blind.Load() }), nil
}

// IsWatchListSemanticsUnSupported makes the informer list, then watch:
// its list is never blind.
func (*blindableLeases) IsWatchListSemanticsUnSupported() bool { return true }

// noAccess never creates the lease namespace: the test did.
type noAccess struct{}

func (noAccess) Ensure(context.Context) error { return nil }
