package controller

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// confirmFunc says, just before a create is sent, why it must not be after
// all, or "" to send it; unconfirmed is true when the caches still showed
// the need but the API server did not. An error is a check that could not
// be made: the create is not sent, and the sync retried.
type confirmFunc func(ctx context.Context, c health.Creation) (why string, unconfirmed bool, err error)

// confirmation returns the check of one sync's creates. It reads the
// NodeHealthCheck and each node from the caches as they are just before a
// create, for Plan.Recheck, and then as the API server has them. Every create, a first remediation or an escalation
// step, reboots, fences, powers off or deletes a machine, and a lagging or
// silent watch must not hold it back (an overloaded API server's watches
// can be tens of seconds behind; a paused or edited NodeHealthCheck must
// not remediate from its old spec). The NodeHealthCheck is read once a
// sync, the node once a create.
func (c *Controller) confirmation(ctx context.Context, name string, plan *health.Plan) confirmFunc {
	// Creates are rechecked in parallel and share one read of the
	// NodeHealthCheck. It starts with the sync's creates, beside their
	// leases, rather than after the first, which would wait for it. A
	// failed read is not kept: the next create reads again.
	var (
		mu      sync.Mutex
		liveNHC *metav1.ObjectMeta
		nhcRead bool
	)
	readNHC := func(ctx context.Context) (*metav1.ObjectMeta, error) {
		mu.Lock()
		defer mu.Unlock()
		if nhcRead {
			return liveNHC, nil
		}
		live, err := c.liveNHCs.Metadata(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, err
		}
		liveNHC, nhcRead = live, true
		return live, nil
	}
	go func() { _, _ = readNHC(ctx) }()
	return func(ctx context.Context, cr health.Creation) (string, bool, error) {
		if _, err := c.writesUntil(); err != nil {
			return "", false, fmt.Errorf("not acting: %w", err)
		}
		var nhc *metav1.ObjectMeta
		if cached, err := c.nhcLister.Get(name); err == nil {
			nhc = &c.latest(cached).ObjectMeta
		}
		node, err := c.nodeLister.Get(cr.Node)
		if err != nil {
			node = nil
		}
		now := c.clock.Now()
		if why := plan.Recheck(nhc, node, cr, now); why != "" {
			return why, false, nil
		}
		liveNHC, err := readNHC(ctx)
		if err != nil {
			return "", false, err
		}
		live, err := c.liveNodes.Node(ctx, cr.Node)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return "", false, err
		}
		why := plan.Recheck(liveNHC, live, cr, now)
		klog.FromContext(ctx).V(4).Info("Node confirmed at the API server", "node", klog.KRef("", cr.Node), "withdrawn", why)
		if why != "" {
			return why, true, nil
		}
		return "", false, nil
	}
}
