package controller

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// statusLeftWithin is how soon a NodeHealthCheck's next sync must be due
// for a sync that created remediations to leave its status to it: in a
// storm, nodes that failed a second apart have deadlines a second apart,
// and the next second's creates would otherwise wait for this sync's
// status write (under load, as long as its creates). The next sync writes
// both in one status.
const statusLeftWithin = time.Second

// unwrittenStatus is a status a sync left to the next sync of its
// NodeHealthCheck.
type unwrittenStatus struct {
	uid    types.UID
	status v1alpha1.NodeHealthCheckStatus
}

// leavesStatus says whether a sync leaves its status to the next one: it
// created remediations without an error, it records no end of a step or
// an incident (health.RecordsAnEnd), the next sync is due within
// statusLeftWithin, and the stored status already shows the remediation
// guard a remediation (health.ShowsRemediation): until it does, the guard
// would let the NodeHealthCheck be deleted, and its resources with it.
func leavesStatus(stored *v1alpha1.NodeHealthCheck, status *v1alpha1.NodeHealthCheckStatus, out *health.Outcome, nextSync time.Duration) bool {
	return len(out.Created) > 0 && len(out.Errors) == 0 && nextSync > 0 && nextSync <= statusLeftWithin &&
		health.ShowsRemediation(&stored.Status) && !health.RecordsAnEnd(&stored.Status, status, out)
}

// recordStatus writes the status a sync built, or, when the sync leaves it
// to the next one and the status it decided from was written, keeps it for
// that sync: a status is never more than one sync behind. It says whether
// the status is written. A write that fails drops the status left
// unwritten, so that the next sync decides from the stored one, as after
// any failed write.
func (c *Controller) recordStatus(ctx context.Context, stored *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus, leave bool) (bool, error) {
	if _, behind := c.unwritten.Load(stored.Name); leave && !behind {
		c.unwritten.Store(stored.Name, &unwrittenStatus{uid: stored.UID, status: status})
		return false, nil
	}
	defer c.unwritten.Delete(stored.Name)
	ctx, cancel, err := c.writeContext(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	if err := c.writeStatus(ctx, stored, status); err != nil {
		return false, err
	}
	return true, nil
}

// writeStatus writes the status through the status subresource when it
// differs from the stored one, with the resourceVersion the plan was made
// from: a conflict means the plan was made from stale data, and the sync is
// retried.
func (c *Controller) writeStatus(ctx context.Context, stored *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus) error {
	if apiequality.Semantic.DeepEqual(stored.Status, status) {
		return nil
	}
	updated := stored.DeepCopy()
	updated.Status = status
	written, err := c.statuses.UpdateStatus(ctx, updated)
	if err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	c.written.Store(stored.Name, written)
	return nil
}

// latest returns the NodeHealthCheck as syncs decide from it: as stored,
// with the status a sync left unwritten for the next one. The status is the
// controller's memory (time-outs of Succeeded=True steps, storm state), and
// a sync must not decide from an older one.
func (c *Controller) latest(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	return c.withUnwritten(c.stored(cached))
}

// withUnwritten is the stored NodeHealthCheck with the status a sync left
// unwritten for the next one, if any.
func (c *Controller) withUnwritten(stored *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	value, ok := c.unwritten.Load(stored.Name)
	if !ok || value.(*unwrittenStatus).uid != stored.UID {
		return stored
	}
	withStatus := *stored
	withStatus.Status = value.(*unwrittenStatus).status
	return &withStatus
}

// stored returns the NodeHealthCheck as this controller last wrote it when
// the informer has not caught up with that write yet: what a status write
// is based on.
func (c *Controller) stored(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	value, ok := c.written.Load(cached.Name)
	if !ok {
		return cached
	}
	written := value.(*v1alpha1.NodeHealthCheck)
	if written.UID == cached.UID {
		if order, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && order < 0 {
			return written
		}
	}
	c.written.CompareAndDelete(cached.Name, value)
	return cached
}
