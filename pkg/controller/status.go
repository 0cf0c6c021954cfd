package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// nodeHealthChecks are the NodeHealthChecks as syncs read and write them:
// the informer's, with what this controller wrote, or left to write, that
// the informer does not show yet. The status is the controller's memory
// (time-outs of Succeeded=True steps, storm state), and a sync must not
// decide from an older one than the last sync's.
type nodeHealthChecks struct {
	lister nhclisters.NodeHealthCheckLister
	// api reads the NodeHealthChecks the cache is behind on, and writes
	// the statuses.
	api *apiServer
	// ahead shadows the informer with the newest NodeHealthCheck this
	// controller wrote or read at the API server.
	ahead *aheadOfCache
	// behind names the NodeHealthChecks the API server was seen to have
	// newer than the cache, to read there before the next sync.
	behind sync.Map
	// deferred holds the status a sync left to the next one.
	deferred *deferredStatuses
}

func newNodeHealthChecks(lister nhclisters.NodeHealthCheckLister, api *apiServer) *nodeHealthChecks {
	return &nodeHealthChecks{lister: lister, api: api, ahead: &aheadOfCache{}, deferred: &deferredStatuses{}}
}

// Get returns a NodeHealthCheck as stored, which a status write is based
// on, and as a sync decides from it: with the status left to that sync.
// When the cache was seen to be behind the API server, the NodeHealthCheck
// is read there first: a watch that stalls, or a status write whose answer
// was lost, would otherwise keep every sync deciding from an old status
// and every write failing with a conflict.
func (n *nodeHealthChecks) Get(ctx context.Context, name string) (stored, nhc *v1alpha1.NodeHealthCheck, err error) {
	if err := n.catchUp(ctx, name); err != nil {
		return nil, nil, err
	}
	return n.Cached(name)
}

// Cached is Get without a read at the API server.
func (n *nodeHealthChecks) Cached(name string) (stored, nhc *v1alpha1.NodeHealthCheck, err error) {
	cached, err := n.lister.Get(name)
	if err != nil {
		return nil, nil, err
	}
	stored = n.ahead.Get(cached)
	return stored, n.deferred.Apply(stored), nil
}

// SeenAtAPIServer notes a NodeHealthCheck's metadata as the API server has
// it: when it is newer than the cache's, the next Get reads it there.
func (n *nodeHealthChecks) SeenAtAPIServer(live *metav1.ObjectMeta) {
	stored, _, err := n.Cached(live.Name)
	if err != nil || stored.UID != live.UID {
		return
	}
	if order, err := resourceversion.CompareResourceVersion(stored.ResourceVersion, live.ResourceVersion); err == nil && order < 0 {
		n.behind.Store(live.Name, struct{}{})
	}
}

// catchUp reads a NodeHealthCheck at the API server if the cache was seen
// to be behind on it. One that is gone is left to the informer to tell.
func (n *nodeHealthChecks) catchUp(ctx context.Context, name string) error {
	if _, behind := n.behind.Load(name); !behind {
		return nil
	}
	live, err := n.api.liveNHCs.Get(ctx, name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading the NodeHealthCheck the cache is behind on: %w", err)
	default:
		klog.FromContext(ctx).V(2).Info(logCacheBehind, "resourceVersion", live.ResourceVersion)
		n.ahead.Remember(live)
	}
	n.behind.Delete(name)
	return nil
}

// logCacheBehind is logged when a sync reads its NodeHealthCheck at the
// API server because the cache is behind it.
const logCacheBehind = "The NodeHealthCheck cache is behind the API server; deciding from the NodeHealthCheck read there"

// WithOwnWrites returns a cached NodeHealthCheck as syncs decide from it.
func (n *nodeHealthChecks) WithOwnWrites(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	return n.deferred.Apply(n.ahead.Get(cached))
}

// Others lists the NodeHealthChecks but nhc, as syncs decide from them.
func (n *nodeHealthChecks) Others(nhc *v1alpha1.NodeHealthCheck) []*v1alpha1.NodeHealthCheck {
	all, err := n.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	others := make([]*v1alpha1.NodeHealthCheck, 0, len(all))
	for _, other := range all {
		if other.UID != nhc.UID {
			others = append(others, n.WithOwnWrites(other))
		}
	}
	return others
}

// Readable lists the NodeHealthChecks that can be read, as syncs decide
// from them.
func (n *nodeHealthChecks) Readable() ([]*v1alpha1.NodeHealthCheck, error) {
	all, err := n.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	readable := make([]*v1alpha1.NodeHealthCheck, 0, len(all))
	for _, nhc := range all {
		nhc = n.WithOwnWrites(nhc)
		if _, bad := unreadable(nhc); !bad {
			readable = append(readable, nhc)
		}
	}
	return readable, nil
}

// RecordStatus writes the status a sync built, or, when the sync leaves it
// to the next one (leavesStatus) and the status it decided from was
// written, keeps it for that sync: a status is never more than one sync
// behind. It says whether the status is written. A write that fails drops
// the status left unwritten, so that the next sync decides from the stored
// one, as after any failed write.
//
// The status goes through the status subresource when it differs from the
// stored one, with the resourceVersion the plan was made from: a conflict
// means the plan was made from stale data, and the sync is retried from
// the NodeHealthCheck read at the API server.
func (n *nodeHealthChecks) RecordStatus(ctx context.Context, stored *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus, leave bool) (bool, error) {
	if leave && n.deferred.Defer(stored, status) {
		return false, nil
	}
	defer n.deferred.Drop(stored.Name)
	ctx, cancel, err := n.api.writesUntil.context(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	if health.SameStatus(&stored.Status, &status) {
		return true, nil
	}
	// The writer changes nothing it is given: the stored object's old
	// status, which a deep copy would copy, is replaced.
	updated := *stored
	updated.Status = status
	defer n.ahead.Writing(stored.Name)()
	written, err := n.api.statuses.UpdateStatus(ctx, &updated)
	if apierrors.IsConflict(err) {
		n.behind.Store(stored.Name, struct{}{})
	}
	if err != nil {
		return false, fmt.Errorf("writing the status: %w", err)
	}
	n.ahead.Remember(written)
	return true, nil
}

// PatchUnreadable writes the status of a NodeHealthCheck that cannot be
// decoded, merged into the object if it still has the resourceVersion read.
func (n *nodeHealthChecks) PatchUnreadable(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus) error {
	n.deferred.Drop(nhc.Name)
	ctx, cancel, err := n.api.writesUntil.context(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := n.api.statuses.PatchStatus(ctx, nhc.Name, nhc.ResourceVersion, status); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	return nil
}

// Forget drops what is kept of a deleted NodeHealthCheck.
func (n *nodeHealthChecks) Forget(name string) {
	n.ahead.Forget(name)
	n.behind.Delete(name)
	n.deferred.Drop(name)
}

// statusLeftWithin is how soon a NodeHealthCheck's next sync must be due
// for a sync that created remediations to leave its status to it, and
// comes at the latest after one that deleted some left it.
const statusLeftWithin = time.Second

// leavesStatus says whether a sync leaves its status to the next one,
// having met no error. One that created remediations does when it records
// no transition (the end of a step or an incident, a relapse, a storm's
// start or end: health.RecordsATransition), the next sync is due within
// statusLeftWithin, and the stored status already shows the remediation
// guard a remediation (health.ShowsRemediation): until it does, the guard
// would let the NodeHealthCheck be deleted, and its resources with it. One
// that deleted remediations does when every one went at once, and it
// records nothing else (health.RecordsOnlyGoneDeletions): the sync their
// watch events wake writes both, the recovery and the entries gone.
func leavesStatus(stored *v1alpha1.NodeHealthCheck, status *v1alpha1.NodeHealthCheckStatus, out *health.Outcome, nextSync time.Duration) bool {
	if len(out.Errors) > 0 {
		return false
	}
	if len(out.Created) > 0 {
		return nextSync > 0 && nextSync <= statusLeftWithin &&
			health.ShowsRemediation(&stored.Status) && !health.RecordsATransition(&stored.Status, status, out)
	}
	return health.RecordsOnlyGoneDeletions(&stored.Status, status, out)
}

// deferredStatuses hold, by NodeHealthCheck, the status a sync left to the
// next sync (leavesStatus): in a storm, nodes that failed a second apart
// have deadlines a second apart, and the next second's creates would
// otherwise wait for this sync's status write (under load, as long as its
// creates). The next sync decides from it, and writes both in one status.
type deferredStatuses struct {
	byName sync.Map
}

type deferredStatus struct {
	uid    types.UID
	status v1alpha1.NodeHealthCheckStatus
}

// Defer leaves a status to the next sync, unless one is left already: it
// returns false then, and the status is to be written now.
func (d *deferredStatuses) Defer(stored *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus) bool {
	_, held := d.byName.LoadOrStore(stored.Name, &deferredStatus{uid: stored.UID, status: status})
	return !held
}

// Apply returns the stored NodeHealthCheck with the status left to its
// next sync, if any.
func (d *deferredStatuses) Apply(stored *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	value, ok := d.byName.Load(stored.Name)
	if !ok || value.(*deferredStatus).uid != stored.UID {
		return stored
	}
	withStatus := *stored
	withStatus.Status = value.(*deferredStatus).status
	return &withStatus
}

func (d *deferredStatuses) Drop(name string) {
	d.byName.Delete(name)
}
