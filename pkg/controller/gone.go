package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// logReleasedLeft is logged at level 2 for each lease a deleted
// NodeHealthCheck left.
const logReleasedLeft = "Released the node lease of a deleted NodeHealthCheck"

// releaseLeasesLeft releases the node leases a deleted NodeHealthCheck
// holds on nodes where nothing of it is left (health.LeasesLeft): no
// NodeHealthCheck syncs them any more, and another one that selects the
// node would wait for them to run out. While a kind that may hold its
// resources is not known yet, or it keeps a lease on a node still busy, it
// is tried again.
func (c *Controller) releaseLeasesLeft(ctx context.Context, name string) (time.Duration, error) {
	if c.api.leases == nil {
		return 0, nil
	}
	// The kinds that may hold its resources are looked at once after a
	// start; the first sync of a replica may be this one. Its creates that
	// no informer showed are looked up as a sync's are: with no
	// NodeHealthCheck left to sync, nothing else would, and they hold its
	// nodes.
	c.api.writer.LookUpLapsed(ctx)
	c.watchEveryKind(ctx)
	left, err := c.observer.WatchLeft(name)
	if err != nil {
		return 0, fmt.Errorf("reading what a deleted NodeHealthCheck left: %w", err)
	}
	holder := health.LeaseHolder(name)
	if !left.Known {
		// Tried again while it holds a lease: no event may come once the
		// kinds are known. The leases' cache tells of its leases once synced.
		if len(left.Leases.HeldBy(holder)) > 0 {
			return problemRequeue, nil
		}
		return 0, nil
	}
	nodes := health.LeasesLeft(holder, left.Leases, left.Busy)
	// A lease kept on a busy node is tried again: its resources may vanish
	// without an event that wakes a deleted NodeHealthCheck.
	var requeueAfter time.Duration
	if len(left.Leases.HeldBy(holder)) > len(nodes) {
		requeueAfter = problemRequeue
	}
	if len(nodes) == 0 {
		return requeueAfter, nil
	}
	actCtx, cancel, err := c.api.writesUntil.context(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	errs := inParallel(actCtx, len(nodes), func(i int) error { return c.api.leases.Release(actCtx, nodes[i], holder) })
	logger := klog.FromContext(ctx)
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("releasing the lease of node %s: %w", nodes[i], err)
			continue
		}
		logger.V(2).Info(logReleasedLeft, "node", klog.KRef("", nodes[i]))
	}
	return requeueAfter, errors.Join(errs...)
}
