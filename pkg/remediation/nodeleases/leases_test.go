package nodeleases

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

var leaseNow = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)

const ours = "NodeHealthCheck-workers"

func testLease(holder string, renewedAgo time.Duration, seconds int32) *coordinationv1.Lease {
	at := metav1.NewMicroTime(leaseNow.Add(-renewedAgo))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-worker-1", Namespace: DefaultNamespace, ResourceVersion: "7"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
			AcquireTime: &at, RenewTime: &at, LeaseTransitions: ptr.To[int32](2),
		},
	}
}

// newLeaseFixture returns node leases on a fake clientset holding objects,
// with a synced informer.
func newLeaseFixture(t *testing.T, objects ...runtime.Object) (*Keeper, *kubefake.Clientset) {
	client := kubefake.NewClientset(objects...)
	return runKeeper(t, fakeLeases{client.CoordinationV1().Leases(DefaultNamespace)}, client), client
}

// runKeeper runs node leases read and written through leases, until the
// test ends, and returns them once their informer synced.
func runKeeper(t *testing.T, leases LeaseClient, client *kubefake.Clientset) *Keeper {
	keeper := New(leases, NewAccess(fakeAccessClients(client), DefaultNamespace, DefaultRole),
		DefaultNamespace, health.DefaultLeaseDuration, health.DefaultLeaseBuffer, clocktesting.NewFakePassiveClock(leaseNow))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go keeper.Run(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), keeper.informer.HasSynced))
	return keeper
}

func storedLease(t *testing.T, client *kubefake.Clientset) *coordinationv1.Lease {
	lease, err := client.CoordinationV1().Leases(DefaultNamespace).Get(context.Background(), "node-worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	return lease
}

func TestAcquireLease(t *testing.T) {
	request := health.LeaseRequest{Node: "worker-1", NodeUID: "node-uid", Holder: ours, Duration: 11 * time.Minute}
	now := metav1.NewMicroTime(leaseNow)
	cases := []struct {
		name      string
		existing  *coordinationv1.Lease
		restart   bool
		wantErr   string
		wantWrite bool
		// want is the lease's spec after the write.
		want coordinationv1.LeaseSpec
	}{
		{name: "none: created", wantWrite: true, want: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(ours), LeaseDurationSeconds: ptr.To[int32](660), AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0)}},
		{name: "ours with time enough: left as it is", existing: testLease(ours, time.Minute, 3600)},
		{name: "ours ending within the duration: extended, acquire time kept", existing: testLease(ours, time.Minute, 660), wantWrite: true,
			want: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(ours), LeaseDurationSeconds: ptr.To[int32](660),
				AcquireTime: ptr.To(metav1.NewMicroTime(leaseNow.Add(-time.Minute))), RenewTime: &now, LeaseTransitions: ptr.To[int32](2)}},
		{name: "ours, ended: taken anew", existing: testLease(ours, time.Hour, 660), wantWrite: true,
			want: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(ours), LeaseDurationSeconds: ptr.To[int32](660), AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](2)}},
		{name: "ours, restarted after an overdue step: acquired now", existing: testLease(ours, time.Minute, 3600), restart: true, wantWrite: true,
			want: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(ours), LeaseDurationSeconds: ptr.To[int32](660), AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](2)}},
		{name: "someone else's in force: held", existing: testLease("node-maintenance-operator", time.Minute, 3600),
			wantErr: "can't update or invalidate the lease because it is held by different owner: node-maintenance-operator"},
		{name: "someone else's ended: taken over", existing: testLease("node-maintenance-operator", time.Hour, 60), wantWrite: true,
			want: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(ours), LeaseDurationSeconds: ptr.To[int32](660), AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.existing != nil {
				objects = append(objects, tc.existing)
			}
			leases, client := newLeaseFixture(t, objects...)
			req := request
			req.Restart = tc.restart
			err := leases.Acquire(context.Background(), req)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				assert.NotEmpty(t, leases.Problem(err), "a lease someone holds blocks the creation")
				return
			}
			require.NoError(t, err)
			writes := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" || a.GetVerb() == "update" {
					writes++
				}
			}
			if !tc.wantWrite {
				assert.Zero(t, writes)
				return
			}
			assert.Equal(t, 1, writes)
			lease := storedLease(t, client)
			assert.Equal(t, tc.want, lease.Spec)
			if tc.existing == nil {
				assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "worker-1", UID: "node-uid"}}, lease.OwnerReferences)
			}
		})
	}
}

func TestRenewLease(t *testing.T) {
	for _, holder := range []string{ours, "node-maintenance-operator"} {
		t.Run(holder, func(t *testing.T) {
			leases, client := newLeaseFixture(t, testLease(holder, 6*time.Minute, 660))
			require.NoError(t, leases.Renew(context.Background(), health.LeaseRequest{Node: "worker-1", Holder: ours, Duration: 11 * time.Minute}))
			renewed := storedLease(t, client).Spec.RenewTime.Time
			if holder == ours {
				assert.Equal(t, leaseNow, renewed.UTC())
			} else {
				assert.Equal(t, leaseNow.Add(-6*time.Minute), renewed.UTC(), "someone else's lease is never renewed")
			}
		})
	}
}

func TestReleaseLease(t *testing.T) {
	for _, holder := range []string{ours, "node-maintenance-operator"} {
		t.Run(holder, func(t *testing.T) {
			leases, client := newLeaseFixture(t, testLease(holder, time.Minute, 660))
			require.NoError(t, leases.Release(context.Background(), "worker-1", ours))
			_, err := client.CoordinationV1().Leases(DefaultNamespace).Get(context.Background(), "node-worker-1", metav1.GetOptions{})
			assert.Equal(t, holder == ours, apierrors.IsNotFound(err))
		})
	}
	leases, _ := newLeaseFixture(t)
	assert.NoError(t, leases.Release(context.Background(), "worker-1", ours), "no lease, nothing to release")
}

func TestReadLeases(t *testing.T) {
	other := testLease(ours, 0, 60)
	other.Name = "nhc-controller.remediation.medik8s.io"
	leases, _ := newLeaseFixture(t, testLease("node-maintenance-operator", time.Minute, 3600), other)
	read, problem, err := leases.Read()
	require.NoError(t, err)
	require.Nil(t, problem)
	assert.Equal(t, map[string]health.NodeLease{"worker-1": {
		Holder: "node-maintenance-operator", Acquired: leaseNow.Add(-time.Minute), Renewed: leaseNow.Add(-time.Minute), Duration: time.Hour,
	}}, read.ByNode, "only node leases")
	assert.Equal(t, health.DefaultLeaseDuration, read.Duration)
}

func TestOwnLeaseWritesAreSeenOnce(t *testing.T) {
	var o ownWrites
	at := leaseNow
	assert.False(t, o.seen("node-a", "NodeHealthCheck-workers", at), "nothing written")
	o.start("node-a", "NodeHealthCheck-workers", at)
	assert.True(t, o.seen("node-a", "NodeHealthCheck-workers", at.Add(time.Second)), "the informer shows our write")
	assert.False(t, o.seen("node-a", "NodeHealthCheck-workers", at.Add(time.Second)), "once")

	o.start("node-a", "NodeHealthCheck-workers", at)
	assert.False(t, o.seen("node-a", "node-maintenance", at), "someone else's holder is not ours")
	o.start("node-b", "NodeHealthCheck-workers", at)
	o.failed("node-b")
	assert.False(t, o.seen("node-b", "NodeHealthCheck-workers", at), "a failed write is not ours")
	o.start("node-c", "NodeHealthCheck-workers", at)
	assert.False(t, o.seen("node-c", "NodeHealthCheck-workers", at.Add(ownEventWindow)),
		"seen late (a stalled watch), it wakes the NodeHealthCheck as anyone's write does")
}

// fakeLeases are a fake clientset's leases, which cannot stream a list.
type fakeLeases struct {
	coordinationclient.LeaseInterface
}

func (fakeLeases) IsWatchListSemanticsUnSupported() bool { return true }
