package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// recheck is one sync's recheck of each of its creates before it is
// sent, twice: at the API server while its lease is taken, and then
// against the caches of the moment just before the send.
type recheck struct {
	// atAPIServer says why the create must not be sent after all, from
	// the node and the NodeHealthCheck as the API server has them, or "";
	// an error is a check that could not be made: the create is not sent,
	// and the sync retried.
	atAPIServer func(ctx context.Context, c health.Creation) (why string, err error)
	// inCaches says why the caches no longer show the need, or "".
	inCaches func(c health.Creation) string
}

// rechecker reads what a sync's creates are rechecked against
// (Plan.Recheck). Every create, a first remediation or an escalation step,
// reboots, fences, powers off or deletes a machine, and a lagging or silent
// watch must not hold it back (an overloaded API server's watches can be
// tens of seconds behind; a paused or edited NodeHealthCheck must not
// remediate from its old spec). So the NodeHealthCheck is read at the API
// server once a sync, and the node once a create (nodeReads).
type rechecker struct {
	api       *apiServer
	liveNodes liveNodes
	nodes     nodecache.Lister
	// newer keeps the nodes that confirm a create, for the syncs until
	// the cache shows them.
	newer *newerNodes
	nhcs  *nodeHealthChecks
	clock clock.PassiveClock
}

// StartReads starts one sync's reads at the API server, of the
// NodeHealthCheck and of firstNode, the node of its first create, before
// the leases are taken, and returns the sync's recheck.
func (r *rechecker) StartReads(ctx context.Context, name string, plan *health.Plan, firstNode string) recheck {
	nhc := newNHCRead(ctx, r.api.liveNHCs, name, r.nhcs.SeenAtAPIServer)
	nodes := newNodeReads(ctx, r.liveNodes, r.nodes, firstNode)
	return recheck{
		atAPIServer: func(ctx context.Context, cr health.Creation) (string, error) {
			return r.atAPIServer(ctx, plan, nhc, nodes, cr)
		},
		inCaches: func(cr health.Creation) string { return r.inCaches(name, plan, cr) },
	}
}

// atAPIServer rechecks a create with its node and the NodeHealthCheck as
// the API server has them. The node is read beside the NodeHealthCheck, not
// after it: under load each read is a wait at the API server, and a create
// would wait for both one after the other.
func (r *rechecker) atAPIServer(ctx context.Context, plan *health.Plan, nhc *nhcRead, nodes *nodeReads, cr health.Creation) (string, error) {
	if _, err := r.api.writesUntil(); err != nil {
		return "", fmt.Errorf("not acting: %w", err)
	}
	type nodeRead struct {
		node *nodeview.Node
		err  error
	}
	nodeDone := make(chan nodeRead, 1)
	go func() {
		node, err := nodes.read(ctx, cr.Node)
		nodeDone <- nodeRead{node: node, err: err}
	}()
	liveNHC, nhcErr := nhc.get(ctx)
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
	why := plan.Recheck(liveNHC, node, cr, r.clock.Now())
	klog.FromContext(ctx).V(4).Info("Node confirmed at the API server", "node", klog.KRef("", cr.Node), "withdrawn", why)
	if why == "" {
		r.newer.Confirmed(node)
	}
	return why, nil
}

// inCaches rechecks a create with its node and the NodeHealthCheck as the
// caches show them now.
func (r *rechecker) inCaches(name string, plan *health.Plan, cr health.Creation) string {
	var nhc *metav1.ObjectMeta
	if _, cached, err := r.nhcs.Cached(name); err == nil {
		nhc = &cached.ObjectMeta
	}
	node, err := r.nodes.Get(cr.Node)
	if err != nil {
		node = nil
	}
	return plan.Recheck(nhc, node, cr, r.clock.Now())
}

// nhcRead is the one read of a NodeHealthCheck at the API server that a
// sync's creates share, checked in parallel. It starts with the sync's
// creates, beside their leases, rather than after the first, which would
// wait for it. A failed read is not kept: the next create reads again. The
// read is one at a time, behind a channel rather than a mutex, so that a
// create waiting for it gives up with its context.
type nhcRead struct {
	live liveNHCs
	name string
	// seen hears of the metadata read, once.
	seen    func(*metav1.ObjectMeta)
	reading chan struct{}
	meta    *metav1.ObjectMeta
	read    bool
}

func newNHCRead(ctx context.Context, live liveNHCs, name string, seen func(*metav1.ObjectMeta)) *nhcRead {
	r := &nhcRead{live: live, name: name, seen: seen, reading: make(chan struct{}, 1)}
	go func() { _, _ = r.get(ctx) }()
	return r
}

// get returns the NodeHealthCheck's metadata, nil when it is gone,
// reading it unless a read succeeded.
func (r *nhcRead) get(ctx context.Context) (*metav1.ObjectMeta, error) {
	select {
	case r.reading <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.reading }()
	if r.read {
		return r.meta, nil
	}
	live, err := r.live.Metadata(ctx, r.name)
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, err
	}
	r.meta, r.read = live, true
	if live != nil {
		r.seen(live)
	}
	return live, nil
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
