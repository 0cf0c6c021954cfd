package controller

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// writeStatus writes the status through the status subresource when it
// changed, with the resourceVersion the plan was made from: a conflict means
// the plan was made from stale data, and the sync is retried.
func (c *Controller) writeStatus(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus) error {
	if apiequality.Semantic.DeepEqual(nhc.Status, status) {
		return nil
	}
	updated := nhc.DeepCopy()
	updated.Status = status
	written, err := c.statuses.UpdateStatus(ctx, updated)
	if err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	c.written.Store(nhc.Name, written)
	return nil
}

// latest returns the NodeHealthCheck as this controller last wrote it when
// the informer has not caught up with that write yet: the status is the
// controller's memory (time-outs of Succeeded=True steps, storm state), and a
// sync must not decide from an older one.
func (c *Controller) latest(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
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
