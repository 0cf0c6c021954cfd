// Package nodeleases keeps the node leases shared with other medik8s
// operators: who holds which node, taken, renewed and released with
// optimistic concurrency.
package nodeleases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/watcherrors"
)

// DefaultNamespace is where node leases live, upstream's namespace.
const DefaultNamespace = "medik8s-leases"

// NamespaceEnv overrides DefaultNamespace, as it does upstream.
const NamespaceEnv = "LEASE_NAMESPACE"

// Namespace is the lease namespace when none is given:
// $LEASE_NAMESPACE, else DefaultNamespace.
func Namespace() string {
	if ns := os.Getenv(NamespaceEnv); ns != "" {
		return ns
	}
	return DefaultNamespace
}

// Why a node lease cannot be taken, until someone fixes it.
const (
	messageLeaseNamespaceMissing = "the node lease namespace %s does not exist, and the controller may not create it: create it, or run the controller with --lease-namespace naming one"
	messageLeasesUnreadable      = "Node leases in namespace %s cannot be read: %v. No remediation starts without knowing who holds which node: grant get, list and watch on leases there, or run the controller with --node-leases=false"
	messageLeaseForbidden        = "node leases in namespace %s cannot be written: %v. Grant get, list, watch, create, update and delete on leases there, or run the controller with --node-leases=false"
)

// Keeper reads the node leases of one namespace from an informer on that
// namespace alone, and writes them with optimistic concurrency: two holders
// never both take a lease, because the API server accepts only one of two
// writes of the same version.
type Keeper struct {
	client LeaseClient
	// access creates the namespace when a lease finds it missing.
	access    accessEnsurer
	informer  cache.SharedIndexInformer
	lister    coordinationlisters.LeaseNamespaceLister
	namespace string
	// duration and buffer are health.Leases' durations.
	duration, buffer time.Duration
	clock            clock.PassiveClock
	errors           watcherrors.Errors
	// taking are the leases this process is taking: the informer's event
	// of such a write is its own.
	taking ownWrites
}

// LeaseClient reads and writes the leases of the lease namespace: a
// kubeclient lease client, or a clientset's.
type LeaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// New returns the node leases of a namespace, through a client of that
// namespace. Its informer watches that namespace alone: kube-node-lease
// holds a lease per node, renewed every 10 seconds, that is no business of
// ours. Run runs it.
func New(client LeaseClient, access accessEnsurer, namespace string, duration, buffer time.Duration, clk clock.PassiveClock) *Keeper {
	lw := &cache.ListWatch{ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.List(ctx, opts)
	}, WatchFuncWithContext: client.Watch}
	// A client that cannot stream a list (a fake) is listed, then watched.
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &coordinationv1.Lease{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	l := &Keeper{
		client: client, access: access, informer: informer, lister: coordinationlisters.NewLeaseLister(informer.GetIndexer()).Leases(namespace),
		namespace: namespace, duration: duration, buffer: buffer, clock: clk,
	}
	l.errors.Record(l.informer, nil)
	return l
}

// Run runs the informer until ctx is done.
func (l *Keeper) Run(ctx context.Context) {
	l.informer.RunWithContext(ctx)
}

// HolderChangeFunc hears of a node lease that was added, deleted, or changed
// hands, with its holders before and after; renewals are no change. own is
// true when this process took the lease for its last holder: the sync that
// took it records the outcome.
type HolderChangeFunc func(node string, own bool, holders ...string)

// AddChangeHandler adds a handler that hears of every change of a node lease.
func (l *Keeper) AddChangeHandler(handler HolderChangeFunc) error {
	notify := func(obj any, added bool) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if lease, ok := obj.(*coordinationv1.Lease); ok {
			if node, ok := leaseNode(lease); ok {
				holder := ptr.Deref(lease.Spec.HolderIdentity, "")
				handler(node, added && l.taking.seen(lease.Name, holder, l.clock.Now()), holder)
			}
		}
	}
	_, err := l.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { notify(obj, true) },
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*coordinationv1.Lease)
			updated, ok2 := newObj.(*coordinationv1.Lease)
			if !ok1 || !ok2 || ptr.Deref(old.Spec.HolderIdentity, "") == ptr.Deref(updated.Spec.HolderIdentity, "") {
				return
			}
			if node, ok := leaseNode(updated); ok {
				holder := ptr.Deref(updated.Spec.HolderIdentity, "")
				handler(node, l.taking.seen(updated.Name, holder, l.clock.Now()), ptr.Deref(old.Spec.HolderIdentity, ""), holder)
			}
		},
		DeleteFunc: func(obj any) { notify(obj, false) },
	})
	return err
}

// Read returns the node leases; nil while the informer has not synced, with
// the problem when it cannot list them.
func (l *Keeper) Read() (*health.Leases, *health.Problem, error) {
	if !l.informer.HasSynced() {
		if err := l.errors.Unsynced(l.informer); err != nil {
			return nil, &health.Problem{Reason: v1alpha1.ReasonNodeLeasesUnavailable, Message: fmt.Sprintf(messageLeasesUnreadable, l.namespace, err)}, nil
		}
		return nil, nil, nil
	}
	all, err := l.lister.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	return Of(all, l.duration, l.buffer), nil, nil
}

// Of is what decisions need of the leases of the lease namespace:
// the node leases among them, by node.
func Of(all []*coordinationv1.Lease, duration, buffer time.Duration) *health.Leases {
	leases := &health.Leases{ByNode: make(map[string]health.NodeLease, len(all)), Duration: duration, Buffer: buffer}
	for _, lease := range all {
		if node, ok := leaseNode(lease); ok {
			leases.ByNode[node] = nodeLeaseOf(lease)
		}
	}
	return leases
}

// leaseNode is the node a node lease is for, by its name and the Node that
// owns it: a lease whose name was shortened names its node only there.
func leaseNode(lease *coordinationv1.Lease) (string, bool) {
	owner := ""
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "Node" && ref.APIVersion == "v1" {
			owner = ref.Name
			break
		}
	}
	return health.LeaseNode(lease.Name, owner)
}

// nodeLeaseOf is what decisions need of a Lease.
func nodeLeaseOf(lease *coordinationv1.Lease) health.NodeLease {
	var l health.NodeLease
	l.Holder = ptr.Deref(lease.Spec.HolderIdentity, "")
	if t := lease.Spec.AcquireTime; t != nil {
		l.Acquired = t.Time
	}
	if t := lease.Spec.RenewTime; t != nil {
		l.Renewed = t.Time
	}
	l.Duration = time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second
	return l
}

// leaseHeldError reports a lease that someone else holds: the plan was made
// before the informer showed their write.
type leaseHeldError struct {
	holder string
}

// Error has upstream's wording.
func (e *leaseHeldError) Error() string {
	return fmt.Sprintf("can't update or invalidate the lease because it is held by different owner: %s", e.holder)
}

// Acquire takes a node's lease for a remediation step, upstream's
// RequestLease: a lease of ours is extended when it would end within the
// duration asked for, someone else's expired lease is taken over, and
// someone else's lease in force is a *leaseHeldError.
func (l *Keeper) Acquire(ctx context.Context, req health.LeaseRequest) error {
	return l.writeFresh(ctx, health.LeaseName(req.Node), func(cached *coordinationv1.Lease) error {
		return l.acquire(ctx, req, cached)
	})
}

// acquire is Acquire on a lease read (nil: there is none).
func (l *Keeper) acquire(ctx context.Context, req health.LeaseRequest, cached *coordinationv1.Lease) error {
	now := metav1.NewMicroTime(l.clock.Now())
	seconds := ptr.To(leaseSeconds(req.Duration))
	if cached == nil {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: health.LeaseName(req.Node), Namespace: l.namespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(req.Holder), LeaseDurationSeconds: seconds,
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0),
			},
		}
		if req.NodeUID != "" {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: req.Node, UID: req.NodeUID}}
		}
		l.taking.start(lease.Name, req.Holder, now.Time)
		_, err := l.client.Create(ctx, lease, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
		if apierrors.IsNotFound(err) {
			// Like upstream, the namespace is created when it is missing,
			// if the controller may.
			if err = l.ensureAccess(ctx); err == nil {
				_, err = l.client.Create(ctx, lease, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
			}
		}
		if err != nil {
			l.taking.failed(lease.Name)
		}
		return err
	}
	current := nodeLeaseOf(cached)
	lease := cached.DeepCopy()
	switch {
	case current.Holder == req.Holder:
		if !req.Restart && !current.Expires().Before(now.Add(req.Duration)) {
			return nil
		}
		if req.Restart || lease.Spec.AcquireTime == nil || !current.HeldAt(now.Time) {
			// Taken anew: an ended lease of ours counts as released.
			lease.Spec.AcquireTime = &now
		}
	case current.HeldAt(now.Time):
		return &leaseHeldError{holder: current.Holder}
	default:
		// Someone else's lease ended: take it over.
		lease.Spec.HolderIdentity = ptr.To(req.Holder)
		lease.Spec.AcquireTime = &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		l.taking.start(lease.Name, req.Holder, now.Time)
	}
	lease.Spec.RenewTime, lease.Spec.LeaseDurationSeconds = &now, seconds
	_, err := l.client.Update(ctx, lease, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
	if err != nil {
		l.taking.failed(lease.Name)
	}
	return err
}

// writeFresh writes a lease by what the informer shows (write's argument,
// nil when it shows none), and, when the API server answers that the
// informer is behind (a conflict, a lease that exists already, or the lease
// shown is gone), once more by the lease read from the API server. A lease
// watch that broke can wait out client-go's back-off, up to a minute,
// before it lists again: until then every write from the informer would
// fail.
func (l *Keeper) writeFresh(ctx context.Context, name string, write func(*coordinationv1.Lease) error) error {
	cached, err := l.lister.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		cached = nil
	case err != nil:
		return err
	}
	err = write(cached)
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && (cached == nil || !apierrors.IsNotFound(err)) {
		return err
	}
	klog.FromContext(ctx).V(2).Info(logLeaseReadAgain, "lease", klog.KRef(l.namespace, name), "err", err)
	fresh, getErr := l.client.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(getErr):
		fresh = nil
	case getErr != nil:
		return getErr
	}
	return write(fresh)
}

// logLeaseReadAgain is logged when a lease write shows the informer behind.
const logLeaseReadAgain = "Node lease write found the informer behind; writing again from the API server's lease"

// accessEnsurer is the part of *Access that Leases uses.
type accessEnsurer interface {
	Ensure(ctx context.Context) error
}

// ensureAccess creates the lease namespace and the controller's rights
// there. A failure is returned as NotFound, the namespace's absence, unless
// it is a right missing.
func (l *Keeper) ensureAccess(ctx context.Context) error {
	err := l.access.Ensure(ctx)
	if err == nil || apierrors.IsForbidden(err) {
		return err
	}
	return apierrors.NewNotFound(corev1.Resource("namespaces"), l.namespace)
}

// isOurs tells whether a lease read (nil: none) is the holder's.
func isOurs(lease *coordinationv1.Lease, holder string) bool {
	return lease != nil && ptr.Deref(lease.Spec.HolderIdentity, "") == holder
}

// Renew extends a lease of ours from now. A lease that is not ours (any
// more) is left alone.
func (l *Keeper) Renew(ctx context.Context, req health.LeaseRequest) error {
	return l.writeFresh(ctx, health.LeaseName(req.Node), func(read *coordinationv1.Lease) error {
		if !isOurs(read, req.Holder) {
			return nil
		}
		lease := read.DeepCopy()
		lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(l.clock.Now()))
		lease.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(req.Duration))
		_, err := l.client.Update(ctx, lease, metav1.UpdateOptions{FieldManager: v1alpha1.FieldManager})
		return err
	})
}

// Release deletes a lease of ours, only the version we read: a lease someone
// else has just taken over is not deleted.
func (l *Keeper) Release(ctx context.Context, node, holder string) error {
	return l.writeFresh(ctx, health.LeaseName(node), func(read *coordinationv1.Lease) error {
		if !isOurs(read, holder) {
			return nil
		}
		err := l.client.Delete(ctx, read.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &read.UID, ResourceVersion: &read.ResourceVersion},
		})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// leaseSeconds rounds a duration up to whole seconds, as leases count them.
func leaseSeconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

// Problem says why a lease cannot be taken until someone does
// something, or "" for an error worth a quick retry, such as a conflict with
// a write the informer does not show yet.
func (l *Keeper) Problem(err error) string {
	var held *leaseHeldError
	switch {
	case errors.As(err, &held):
		return err.Error()
	case apierrors.IsNotFound(err):
		return fmt.Sprintf(messageLeaseNamespaceMissing, l.namespace)
	case apierrors.IsForbidden(err):
		return fmt.Sprintf(messageLeaseForbidden, l.namespace, err)
	}
	return ""
}
