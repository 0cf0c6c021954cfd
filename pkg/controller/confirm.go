package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// creationCheck checks each of a sync's creates before it is sent, twice:
// at the API server while its lease is taken, and then against the caches
// of the moment just before the send.
type creationCheck struct {
	// live says why the create must not be sent after all, from the node
	// and the NodeHealthCheck as the API server has them, or ""; an error
	// is a check that could not be made: the create is not sent, and the
	// sync retried.
	live func(ctx context.Context, c health.Creation) (why string, err error)
	// caches says why the caches no longer show the need, or "".
	caches func(c health.Creation) string
}

// confirmation returns the checks of one sync's creates, for Plan.Recheck.
// Every create, a first remediation or an escalation step, reboots, fences,
// powers off or deletes a machine, and a lagging or silent watch must not
// hold it back (an overloaded API server's watches can be tens of seconds
// behind; a paused or edited NodeHealthCheck must not remediate from its
// old spec). The NodeHealthCheck is read at the API server once a sync, the
// node once a create; firstNode, the node of the sync's first create, is
// read at once, before the leases are taken.
func (c *Controller) confirmation(ctx context.Context, name string, plan *health.Plan, firstNode string) creationCheck {
	// Creates are checked in parallel and share one read of the
	// NodeHealthCheck. It starts with the sync's creates, beside their
	// leases, rather than after the first, which would wait for it. A
	// failed read is not kept: the next create reads again. The read is
	// one at a time, behind a channel rather than a mutex, so that a create
	// waiting for it gives up with its context.
	var (
		reading = make(chan struct{}, 1)
		liveNHC *metav1.ObjectMeta
		nhcRead bool
	)
	readNHC := func(ctx context.Context) (*metav1.ObjectMeta, error) {
		select {
		case reading <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-reading }()
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
	nodes := newNodeReads(ctx, c.liveNodes, c.nodeLister, firstNode)
	live := func(ctx context.Context, cr health.Creation) (string, error) {
		if _, err := c.writesUntil(); err != nil {
			return "", fmt.Errorf("not acting: %w", err)
		}
		// The node is read beside the NodeHealthCheck, not after it: under
		// load each read is a wait at the API server, and a create would
		// wait for both one after the other.
		type nodeRead struct {
			node *nodeview.Node
			err  error
		}
		nodeDone := make(chan nodeRead, 1)
		go func() {
			node, err := nodes.read(ctx, cr.Node)
			nodeDone <- nodeRead{node: node, err: err}
		}()
		liveNHC, nhcErr := readNHC(ctx)
		read := <-nodeDone
		if nhcErr != nil {
			return "", nhcErr
		}
		node := read.node
		switch {
		case apierrors.IsNotFound(read.err):
			node = nil
		case read.err != nil:
			return "", read.err
		}
		why := plan.Recheck(liveNHC, node, cr, c.clock.Now())
		klog.FromContext(ctx).V(4).Info("Node confirmed at the API server", "node", klog.KRef("", cr.Node), "withdrawn", why)
		return why, nil
	}
	caches := func(cr health.Creation) string {
		var nhc *metav1.ObjectMeta
		if cached, err := c.nhcLister.Get(name); err == nil {
			nhc = &c.latest(cached).ObjectMeta
		}
		node, err := c.nodeLister.Get(cr.Node)
		if err != nil {
			node = nil
		}
		return plan.Recheck(nhc, node, cr, c.clock.Now())
	}
	return creationCheck{live: live, caches: caches}
}

// nodeReads reads the nodes of one sync's creates as the API server has
// them: the first consistently, at once, and the others at least as new
// as it, once it is answered. The first read goes before the leases, so
// that it does not wait behind them at the API server. The others are read
// from the node cache once it holds the first read's revision, which it
// does within milliseconds while kubelets write: a storm's creates then
// send no read each, where each read waited behind the others and the
// creates at the API server. When the cache does not hold it within
// cacheCatchUp (a cluster whose nodes are quiet moves its revision on
// with no node event), they are read at the API server, at least as new as
// the first, which its watch cache answers at once.
type nodeReads struct {
	live  liveNodes
	cache cachedNodes
	// firstNode is the node read first, and answered is closed once its
	// read is answered: node, revision and err.
	firstNode string
	answered  chan struct{}
	node      *nodeview.Node
	revision  string
	err       error
}

// cachedNodes is the node cache, read once it holds a revision.
type cachedNodes interface {
	HoldsVersion(resourceVersion string) bool
	Get(name string) (*nodeview.Node, error)
}

// cacheCatchUp bounds how long a create waits for the node cache to hold
// the first read's revision, beside its lease, before it reads its node at
// the API server; cachePoll is how often it looks.
const (
	cacheCatchUp = 100 * time.Millisecond
	cachePoll    = 5 * time.Millisecond
)

func newNodeReads(ctx context.Context, live liveNodes, cache cachedNodes, firstNode string) *nodeReads {
	r := &nodeReads{live: live, cache: cache, firstNode: firstNode, answered: make(chan struct{})}
	go func() {
		defer close(r.answered)
		r.node, r.revision, r.err = live.Node(ctx, firstNode, "")
	}()
	return r
}

// read reads a node, after the first read is answered: that answer for the
// first node, else the cache once it holds that revision, else a read at
// the API server at least as new, or a consistent one if the first failed.
func (r *nodeReads) read(ctx context.Context, name string) (*nodeview.Node, error) {
	select {
	case <-r.answered:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if name == r.firstNode {
		return r.node, r.err
	}
	revision := r.revision
	if r.err != nil && !apierrors.IsNotFound(r.err) {
		revision = ""
	} else if r.cacheHolds(ctx, revision) {
		return r.cache.Get(name)
	}
	node, _, err := r.live.Node(ctx, name, revision)
	return node, err
}

// cacheHolds waits up to cacheCatchUp for the node cache to hold revision.
func (r *nodeReads) cacheHolds(ctx context.Context, revision string) bool {
	if revision == "" {
		return false
	}
	deadline := time.Now().Add(cacheCatchUp)
	for !r.cache.HoldsVersion(revision) {
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-time.After(cachePoll):
		case <-ctx.Done():
			return false
		}
	}
	return true
}
