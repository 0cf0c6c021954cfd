package nodeleases

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// TestWritesFromAnInformerBehindTheAPIServerSucceed: a lease watch that
// broke may wait out client-go's back-off, up to a minute, before it lists
// again. Meanwhile the informer shows the leases as they were, and every
// write guarded by their resourceVersion conflicts; the write that learns
// so reads the lease at the API server and decides again on it.
func TestWritesFromAnInformerBehindTheAPIServerSucceed(t *testing.T) {
	request := health.LeaseRequest{Node: "worker-1", NodeUID: "node-uid", Holder: ours, Duration: 11 * time.Minute}
	cases := []struct {
		name string
		// shown is what the informer shows (nil: none), stored what the
		// API server holds (nil: none).
		shown, stored *coordinationv1.Lease
		write         func(*Keeper) error
		wantErr       string
		// want is the stored lease's holder and renew time after the
		// write; gone: the lease is deleted.
		wantHolder string
		wantRenew  time.Time
		gone       bool
	}{
		{name: "acquire: ours, renewed since the informer's version, extended again",
			shown: testLease(ours, 10*time.Minute, 660), stored: renewedLease(testLease(ours, 4*time.Minute, 660)),
			write:      func(k *Keeper) error { return k.Acquire(context.Background(), request) },
			wantHolder: ours, wantRenew: leaseNow},
		{name: "acquire: ours, created by an earlier write the informer did not show",
			stored:     renewedLease(testLease(ours, time.Minute, 3600)),
			write:      func(k *Keeper) error { return k.Acquire(context.Background(), request) },
			wantHolder: ours, wantRenew: leaseNow.Add(-time.Minute)},
		{name: "acquire: someone else took it meanwhile: held",
			stored:     renewedLease(testLease("node-maintenance-operator", time.Minute, 3600)),
			write:      func(k *Keeper) error { return k.Acquire(context.Background(), request) },
			wantErr:    "can't update or invalidate the lease because it is held by different owner: node-maintenance-operator",
			wantHolder: "node-maintenance-operator", wantRenew: leaseNow.Add(-time.Minute)},
		{name: "acquire: the lease shown was deleted: created anew",
			shown:      testLease(ours, 10*time.Minute, 660),
			write:      func(k *Keeper) error { return k.Acquire(context.Background(), request) },
			wantHolder: ours, wantRenew: leaseNow},
		{name: "renew: the lease shown was deleted: nothing to renew",
			shown: testLease(ours, 6*time.Minute, 660),
			write: func(k *Keeper) error { return k.Renew(context.Background(), request) },
			gone:  true},
		{name: "renew: ours, renewed since the informer's version",
			shown: testLease(ours, 6*time.Minute, 660), stored: renewedLease(testLease(ours, 5*time.Minute, 660)),
			write:      func(k *Keeper) error { return k.Renew(context.Background(), request) },
			wantHolder: ours, wantRenew: leaseNow},
		{name: "renew: someone else's since: left alone",
			shown: testLease(ours, 6*time.Minute, 660), stored: renewedLease(testLease("node-maintenance-operator", time.Minute, 660)),
			write:      func(k *Keeper) error { return k.Renew(context.Background(), request) },
			wantHolder: "node-maintenance-operator", wantRenew: leaseNow.Add(-time.Minute)},
		{name: "release: ours, renewed since the informer's version",
			shown: testLease(ours, 6*time.Minute, 660), stored: renewedLease(testLease(ours, 5*time.Minute, 660)),
			write: func(k *Keeper) error { return k.Release(context.Background(), "worker-1", ours) },
			gone:  true},
		{name: "release: someone else's since: kept",
			shown: testLease(ours, 6*time.Minute, 660), stored: renewedLease(testLease("node-maintenance-operator", time.Minute, 660)),
			write:      func(k *Keeper) error { return k.Release(context.Background(), "worker-1", ours) },
			wantHolder: "node-maintenance-operator", wantRenew: leaseNow.Add(-time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			keeper, client := newLaggingLeaseFixture(t, tc.shown, tc.stored)
			err := tc.write(keeper)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			lease, err := client.CoordinationV1().Leases(DefaultNamespace).Get(context.Background(), "node-worker-1", metav1.GetOptions{})
			if tc.gone {
				assert.True(t, apierrors.IsNotFound(err), "deleted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantHolder, ptr.Deref(lease.Spec.HolderIdentity, ""))
			assert.Equal(t, tc.wantRenew, lease.Spec.RenewTime.UTC())
		})
	}
}

// renewedLease is a lease one version past testLease's.
func renewedLease(lease *coordinationv1.Lease) *coordinationv1.Lease {
	lease.ResourceVersion = "8"
	return lease
}

// newLaggingLeaseFixture returns node leases whose informer shows shown
// and nothing after, on a fake clientset that holds stored and, as an API
// server does, refuses a write guarded by another resourceVersion.
func newLaggingLeaseFixture(t *testing.T, shown, stored *coordinationv1.Lease) (*Keeper, *kubefake.Clientset) {
	var objects []runtime.Object
	if stored != nil {
		objects = append(objects, stored)
	}
	client := kubefake.NewClientset(objects...)
	leaseResource := coordinationv1.SchemeGroupVersion.WithResource("leases")
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		lease := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		version, err := storedVersion(client, lease.Name, lease.ResourceVersion)
		if err != nil {
			return true, nil, err
		}
		lease.ResourceVersion = strconv.Itoa(version + 1)
		return true, lease, client.Tracker().Update(leaseResource, lease, DefaultNamespace)
	})
	client.PrependReactor("delete", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		del := action.(clienttesting.DeleteActionImpl)
		if p := del.DeleteOptions.Preconditions; p != nil && p.ResourceVersion != nil {
			if _, err := storedVersion(client, del.Name, *p.ResourceVersion); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	var listed []coordinationv1.Lease
	if shown != nil {
		listed = append(listed, *shown)
	}
	lagging := laggingLeases{fakeLeases{client.CoordinationV1().Leases(DefaultNamespace)}, listed}
	return runKeeper(t, lagging, client), client
}

// storedVersion is the resourceVersion of the stored lease, or a conflict
// when it is not want. Reactors read the tracker: the clientset is locked.
func storedVersion(client *kubefake.Clientset, name, want string) (int, error) {
	obj, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), DefaultNamespace, name)
	if err != nil {
		return 0, err
	}
	stored := obj.(*coordinationv1.Lease)
	if stored.ResourceVersion != want {
		return 0, apierrors.NewConflict(coordinationv1.Resource("leases"), name, nil)
	}
	return strconv.Atoi(stored.ResourceVersion)
}

// laggingLeases lists the leases an informer showed before its watch broke,
// and watches nothing after.
type laggingLeases struct {
	fakeLeases
	listed []coordinationv1.Lease
}

func (l laggingLeases) List(context.Context, metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	return &coordinationv1.LeaseList{Items: l.listed}, nil
}

func (laggingLeases) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}
