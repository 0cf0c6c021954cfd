// Package controller runs NodeHealthChecks: shared informers for Nodes and
// NodeHealthChecks, handlers that enqueue the NodeHealthChecks a change
// concerns, and a rate-limited workqueue whose sync runs one way: it
// decides (pkg/gather, pkg/health), acts (pkg/remediation, the node
// leases), and records the status, events and metrics.
package controller

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

// maxRetryDelay bounds how long a NodeHealthCheck whose sync failed waits
// for its next try. client-go's default doubles up to 1000 s: after a
// minute of conflicts (a status write whose answer was lost, while the
// watch that would show the new resourceVersion was silent) the next try
// would come minutes after the cause had gone, and the status would go
// unrecorded that long. Every NodeHealthCheck that keeps failing costs a
// try every 30 s.
const maxRetryDelay = 30 * time.Second

// retryLimiter is client-go's controller rate limiter, its per-item
// back-off capped at maxRetryDelay.
func retryLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// QueueName names the workqueue, and so its workqueue_* metrics.
const QueueName = "nodehealthcheck"

// notReadyRequeue is how soon a NodeHealthCheck whose informers have not
// synced, or whose own writes are not visible yet, is tried again. The
// informer events usually come first.
const notReadyRequeue = time.Second

// problemRequeue is how soon a NodeHealthCheck that cannot be evaluated is
// looked at again, besides the events that wake it.
const problemRequeue = 10 * time.Second

// maxCreationsPerSync bounds the remediation resources one sync creates, so
// that none is sent long after the snapshot it was decided from: sent all at
// once within the client's burst (three requests each), they take one round
// trip of a lease and a resource, and each is rechecked just before. The
// next sync follows at once and goes on. A storm's nodes that fail within
// one second share a deadline, and the bound keeps them in one sync: a
// second sync would wait for the first one's status write.
const maxCreationsPerSync = 300

// syncTimeout bounds the API calls of one sync.
const syncTimeout = time.Minute

// Controller runs NodeHealthChecks. What makes a sync fast at scale and
// in a storm stands each in a small type of its own, a field below.
type Controller struct {
	// queue holds the names of the NodeHealthChecks to sync, which the
	// handlers enqueue (handlers.go).
	queue    workqueue.TypedRateLimitingInterface[string]
	handlers *handlers
	// nhcSynced and nodeSynced tell whether the NodeHealthCheck and node
	// caches have synced.
	nhcSynced, nodeSynced cache.InformerSynced

	// nhcs are the NodeHealthChecks as syncs read and write them: the
	// informer's, shadowed by this controller's own last status write
	// until the informer shows it, and with the status a sync deferred to
	// the next (status.go).
	nhcs *nodeHealthChecks
	// nodeLister reads nodes from the shared informer's cache.
	nodeLister nodecache.Lister
	// selectors are the parsed selectors of all NodeHealthChecks
	// (selectors.go).
	selectors *selectorCache
	// members is the index of the nodes each NodeHealthCheck selects
	// (membership.go).
	members *membership
	// catchUp holds a NodeHealthCheck's first evaluation until the node
	// cache shows the nodes the API server selects for it (catchup.go).
	catchUp *nodeCatchUp
	// newer are the nodes creates confirmed at the API server, newer than
	// the cache shows them (newernodes.go).
	newer *newerNodes
	// observer keeps the remediation kinds watched and reads them.
	observer remediationObserver

	// api is what a sync sends past the caches (injection.go).
	api *apiServer
	// actor carries out a plan: its creates fanned out (creates.go), each
	// rechecked just before it is sent (confirm.go).
	actor *actor
	// events records events on NodeHealthChecks.
	events *eventRecorder
	// metrics are the Prometheus metrics; nil records none.
	metrics *Metrics
	// clock is the time every decision is made at.
	clock clock.Clock
	// statusBytes bounds a status's unhealthyNodes (health.Input.StatusBytes).
	statusBytes int
	// pacing is told which NodeHealthChecks have a node that is not
	// healthy; while one has, the node cache reads updates as they arrive.
	pacing nodePacing
	// retries are the nodes whose create failed or was refused, held back
	// for a back-off so that the others go first (createretries.go).
	retries *createRetries
	// checkQuiet hears of a decision that leaving quiet nodes out changed
	// (Config.CheckQuiet); nil checks none.
	checkQuiet func(nhc string, err error)
}

// Config is what a controller works with, each seam of one role.
type Config struct {
	// Nodes and NodeHealthChecks are the informers, not started yet, so
	// that the controller's indexer can be added.
	Nodes            NodeCache
	NodeHealthChecks NodeHealthCheckInformer
	// Client reads NodeHealthChecks at the API server and writes their
	// statuses: the remediation group's typed client (a clientset's
	// RemediationV1alpha1()).
	Client remediationclient.RemediationV1alpha1Interface
	// Observer watches and reads remediation resources, and Changes tells
	// of their changes.
	Observer remediationObserver
	Changes  remediationChanges
	// Writer writes remediation resources.
	Writer remediationWriter
	// Leases takes node leases, and LeaseChanges tells of their changes;
	// both nil when the controller takes none.
	Leases       nodeLeases
	LeaseChanges leaseChanges
	Recorder     record.EventRecorder
	// Metrics are the Prometheus metrics; nil records none.
	Metrics *Metrics
	Clock   clock.WithTicker
	// StatusBytes bounds a status's unhealthyNodes in estimated bytes
	// (health.Input.StatusBytes); 0 is health.DefaultStatusBytes. The
	// simulation makes it small, so that its histories meet the bound.
	StatusBytes int
	// WritesUntil says until when this replica may write (zero: no end),
	// or why it may not write now: with leader election, a replica that
	// cannot show that it still holds the lease must not act beside the
	// one that may have taken it over, and a write it sends must not land
	// after that. Nil writes without end.
	WritesUntil func() (time.Time, error)
	// Yield holds back the writes that can wait while creates are in
	// flight: the deletes here, the events in the recorder's sink
	// (Yield.EventSink). Nil holds back nothing.
	Yield *Yield
	// CheckQuiet, when set, makes every sync decide twice, with the quiet
	// nodes left out and with every selected node (health.CompareLeftOut),
	// and hears of each difference: the simulation's check of what a sync
	// reads. Nil decides once, from the nodes that show something.
	CheckQuiet func(nhc string, err error)
}

// New returns a controller: the one construction path, for the binary and
// the tests alike (which hand it fakes of the seams, injection.go).
func New(ctx context.Context, cfg Config) (*Controller, error) {
	nhcLister, nodeLister := cfg.NodeHealthChecks.Lister(), cfg.Nodes.Lister()
	api := &apiServer{
		writer: cfg.Writer, leases: cfg.Leases,
		statuses: clientNHCs{client: cfg.Client}, liveNHCs: clientNHCs{client: cfg.Client},
		writesUntil: cfg.WritesUntil,
	}
	if api.writesUntil == nil {
		api.writesUntil = func() (time.Time, error) { return time.Time{}, nil }
	}
	nhcs := newNodeHealthChecks(nhcLister, api)
	if informer, ok := cfg.NodeHealthChecks.(interface{ ReuseAnswered(answeredLookup) }); ok {
		informer.ReuseAnswered(nhcs.ahead.Answered)
	}
	c := &Controller{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			retryLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: cfg.Clock},
		),
		nhcSynced:   cfg.NodeHealthChecks.Informer().HasSynced,
		nodeSynced:  cfg.Nodes.Informer().HasSynced,
		nhcs:        nhcs,
		nodeLister:  nodeLister,
		selectors:   newSelectorCache(nhcLister),
		members:     newMembership(nodeLister),
		catchUp:     newNodeCatchUp(cfg.Nodes, nodeLister, cfg.Clock),
		newer:       newNewerNodes(nodeLister),
		observer:    cfg.Observer,
		api:         api,
		events:      newEventRecorder(cfg.Recorder),
		metrics:     cfg.Metrics,
		clock:       cfg.Clock,
		statusBytes: cfg.StatusBytes,
		pacing:      cfg.Nodes,
		retries:     newCreateRetries(cfg.Clock),
		checkQuiet:  cfg.CheckQuiet,
	}
	c.actor = &actor{
		api: api, yield: cfg.Yield,
		creates:  &createFanOut{api: api, yield: cfg.Yield, retries: c.retries},
		rechecks: &rechecker{api: api, liveNodes: cfg.Nodes, nodes: nodeLister, newer: c.newer, nhcs: nhcs, clock: cfg.Clock},
	}
	c.handlers = &handlers{
		queue: c.queue, byTemplate: cfg.NodeHealthChecks.Informer().GetIndexer(),
		nodes: nodeLister, selectors: c.selectors, members: c.members, newer: c.newer,
	}
	if err := c.handlers.Register(klog.FromContext(ctx), cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// CachesSynced tells whether the Node and NodeHealthCheck caches have synced.
func (c *Controller) CachesSynced() bool {
	return c.nhcSynced() && c.nodeSynced()
}

// Run waits for the caches, runs the workers until ctx ends, then stops
// taking work and lets the syncs in flight finish.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.nhcSynced, c.nodeSynced) {
		// Only a stop ends the wait: a SIGTERM at start is a clean exit.
		logger.Info("Stopped before the caches synced")
		c.queue.ShutDown()
		return nil
	}
	logger.Info("Starting workers", "count", workers)
	c.metrics.setActing(true)
	defer c.metrics.setActing(false)
	var running sync.WaitGroup
	for range workers {
		running.Go(func() {
			// Syncs in flight finish with their own deadline after ctx ends.
			for c.processNextWorkItem(context.WithoutCancel(ctx)) {
			}
		})
	}
	<-ctx.Done()
	logger.Info("Stopping workers; syncs in flight finish first")
	c.queue.ShutDown()
	running.Wait()
	logger.Info("Workers stopped")
	return nil
}

// processNextWorkItem syncs one NodeHealthCheck. Errors requeue through the
// rate limiter; a deadline in the plan requeues with AddAfter, whichever
// comes first.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	requeueAfter, err := c.Sync(ctx, name)
	if err != nil {
		c.metrics.syncFailed(name)
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing NodeHealthCheck; requeuing", "nodeHealthCheck", klog.KRef("", name))
		c.queue.AddRateLimited(name)
	} else {
		c.queue.Forget(name)
	}
	if requeueAfter > 0 {
		c.queue.AddAfter(name, requeueAfter)
	}
	return true
}

// forget forgets what the controller kept about a deleted NodeHealthCheck.
func (c *Controller) forget(name string) {
	c.pacing.ReadAtOnceFrom(name, time.Time{})
	c.catchUp.Forget(name)
	c.observer.Forget(name)
	c.members.Forget(name)
	c.nhcs.Forget(name)
	c.events.Forget(name)
	c.metrics.forget(name)
	c.retries.Forget(name)
}
