package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

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
	// api writes the statuses.
	api *apiServer
	// written shadows the informer with this controller's last status
	// write of each NodeHealthCheck.
	written *ownWrites
	// deferred holds the status a sync left to the next one.
	deferred *deferredStatuses
}

func newNodeHealthChecks(lister nhclisters.NodeHealthCheckLister, api *apiServer) *nodeHealthChecks {
	return &nodeHealthChecks{lister: lister, api: api, written: &ownWrites{}, deferred: &deferredStatuses{}}
}

// Get returns a NodeHealthCheck as stored, which a status write is based
// on, and as a sync decides from it: with the status left to that sync.
func (n *nodeHealthChecks) Get(name string) (stored, nhc *v1alpha1.NodeHealthCheck, err error) {
	cached, err := n.lister.Get(name)
	if err != nil {
		return nil, nil, err
	}
	stored = n.written.Get(cached)
	return stored, n.deferred.Apply(stored), nil
}

// WithOwnWrites returns a cached NodeHealthCheck as syncs decide from it.
func (n *nodeHealthChecks) WithOwnWrites(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	return n.deferred.Apply(n.written.Get(cached))
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
// means the plan was made from stale data, and the sync is retried.
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
	if apiequality.Semantic.DeepEqual(stored.Status, status) {
		return true, nil
	}
	updated := stored.DeepCopy()
	updated.Status = status
	written, err := n.api.statuses.UpdateStatus(ctx, updated)
	if err != nil {
		return false, fmt.Errorf("writing the status: %w", err)
	}
	n.written.Remember(written)
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
	n.written.Forget(name)
	n.deferred.Drop(name)
}

// ownWrites shadows the informer with this controller's last status write
// of each NodeHealthCheck, until the informer shows it: a sync that runs
// before the watch delivers the write (the next second's creates, in a
// storm) decides from the status written, not an older one, and bases its
// own write on that write's resourceVersion instead of failing with a
// conflict and waiting for a retry.
type ownWrites struct {
	byName sync.Map
}

// Remember keeps a NodeHealthCheck as the API server answered its write.
func (w *ownWrites) Remember(written *v1alpha1.NodeHealthCheck) {
	w.byName.Store(written.Name, written)
}

// Get returns the NodeHealthCheck as this controller last wrote it while
// the cached one is older, else the cached one, and forgets a write the
// cache shows.
func (w *ownWrites) Get(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	value, ok := w.byName.Load(cached.Name)
	if !ok {
		return cached
	}
	written := value.(*v1alpha1.NodeHealthCheck)
	if written.UID == cached.UID {
		if order, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && order < 0 {
			return written
		}
	}
	w.byName.CompareAndDelete(cached.Name, value)
	return cached
}

func (w *ownWrites) Forget(name string) {
	w.byName.Delete(name)
}

// statusLeftWithin is how soon a NodeHealthCheck's next sync must be due
// for a sync that created remediations to leave its status to it.
const statusLeftWithin = time.Second

// leavesStatus says whether a sync leaves its status to the next one: it
// created remediations without an error, it records no transition (the end
// of a step or an incident, a relapse, a storm's start or end:
// health.RecordsATransition), the next sync is due within
// statusLeftWithin, and the stored status already shows the remediation
// guard a remediation (health.ShowsRemediation): until it does, the guard
// would let the NodeHealthCheck be deleted, and its resources with it.
func leavesStatus(stored *v1alpha1.NodeHealthCheck, status *v1alpha1.NodeHealthCheckStatus, out *health.Outcome, nextSync time.Duration) bool {
	return len(out.Created) > 0 && len(out.Errors) == 0 && nextSync > 0 && nextSync <= statusLeftWithin &&
		health.ShowsRemediation(&stored.Status) && !health.RecordsATransition(&stored.Status, status, out)
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
