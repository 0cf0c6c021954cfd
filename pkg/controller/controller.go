// Package controller runs NodeHealthChecks: shared informers for Nodes and
// NodeHealthChecks, and a rate-limited workqueue of NodeHealthCheck names
// whose sync decides with pkg/health, acts with pkg/remediation, and records
// the status, events and metrics.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
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

// Controller runs NodeHealthChecks.
type Controller struct {
	// nhcLister reads NodeHealthChecks from the shared informer's cache.
	nhcLister nhclisters.NodeHealthCheckLister
	// nhcIndexer finds NodeHealthChecks by the templates they reference.
	nhcIndexer cache.Indexer
	// nhcSynced tells whether the NodeHealthCheck cache has synced.
	nhcSynced cache.InformerSynced
	// nodeLister reads nodes from the shared informer's cache, as health.Nodes.
	nodeLister nodecache.Lister
	// nodeSynced tells whether the node cache has synced.
	nodeSynced cache.InformerSynced
	// liveNodes lists nodes at the API server, for a NodeHealthCheck's
	// first evaluation (catchup.go).
	liveNodes liveNodes
	// catchUps are the nodes the cache must show before a NodeHealthCheck's
	// first evaluation.
	catchUps *catchUps

	// observer keeps the remediation kinds watched and reads them; writer
	// writes remediation resources; leases takes node leases, nil when the
	// controller takes none.
	observer remediationObserver
	writer   remediationWriter
	leases   nodeLeases
	// statuses writes NodeHealthCheck statuses.
	statuses statusWriter
	// liveNHCs reads NodeHealthChecks at the API server, to confirm a
	// create against the spec as it is, whatever the watch lags.
	liveNHCs liveNHCs
	// recorder records events on NodeHealthChecks.
	recorder record.EventRecorder
	// metrics are the Prometheus metrics; nil records none.
	metrics *Metrics
	// clock is the time every decision is made at.
	clock clock.Clock
	// yield holds back deletes while creates are in flight; nil: none.
	yield *Yield
	// statusBytes bounds a status's unhealthyNodes (health.Input.StatusBytes).
	statusBytes int

	// queue holds the names of the NodeHealthChecks to sync.
	queue workqueue.TypedRateLimitingInterface[string]
	// selectors are the parsed selectors of all NodeHealthChecks, for
	// routing node events.
	selectors *selectorCache
	// members are the nodes each NodeHealthCheck selects, kept by the node
	// handlers, so that a sync does not match every node of the cluster.
	members *membership
	// written holds the NodeHealthChecks as this controller last wrote them,
	// for syncs that run before the informer shows the write.
	written sync.Map
	// unwritten holds, by name, the status a sync left to the next sync of
	// its NodeHealthCheck (status.go).
	unwritten sync.Map
	// skips remembers which lasting events were recorded, to record each once.
	skips *skipMemory
	// pacing is told which NodeHealthChecks have a node that is not
	// healthy; while one has, the node cache reads updates as they arrive.
	pacing nodePacing
	// writesUntil says until when this replica may write (zero: no end),
	// or why it may not write now: with leader election, whether and how
	// long it can show that it still holds the lease.
	writesUntil func() (time.Time, error)
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
}

// New returns a controller: the one construction path, for the binary and
// the tests alike (which hand it fakes of the seams, injection.go).
func New(ctx context.Context, cfg Config) (*Controller, error) {
	logger := klog.FromContext(ctx)
	nodeInformer, nhcInformer := cfg.Nodes, cfg.NodeHealthChecks
	c := &Controller{
		nhcLister:   nhcInformer.Lister(),
		nhcIndexer:  nhcInformer.Informer().GetIndexer(),
		nhcSynced:   nhcInformer.Informer().HasSynced,
		nodeLister:  nodeInformer.Lister(),
		nodeSynced:  nodeInformer.Informer().HasSynced,
		liveNodes:   nodeInformer,
		catchUps:    newCatchUps(),
		observer:    cfg.Observer,
		writer:      cfg.Writer,
		leases:      cfg.Leases,
		statuses:    clientNHCs{client: cfg.Client},
		liveNHCs:    clientNHCs{client: cfg.Client},
		recorder:    cfg.Recorder,
		metrics:     cfg.Metrics,
		clock:       cfg.Clock,
		yield:       cfg.Yield,
		statusBytes: cfg.StatusBytes,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			retryLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: cfg.Clock},
		),
		selectors:   newSelectorCache(),
		members:     newMembership(),
		skips:       newSkipMemory(),
		pacing:      nodeInformer,
		writesUntil: cfg.WritesUntil,
	}
	if c.writesUntil == nil {
		c.writesUntil = func() (time.Time, error) { return time.Time{}, nil }
	}
	if err := nhcInformer.Informer().AddIndexers(cache.Indexers{templateIndex: indexByTemplate}); err != nil {
		return nil, fmt.Errorf("adding the template index: %w", err)
	}
	if _, err := nhcInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.addNHC(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { c.updateNHC(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { c.deleteNHC(logger, obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, err
	}
	if _, err := nodeInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, isInInitialList bool) { c.addNode(obj, isInInitialList) },
		UpdateFunc: func(oldObj, newObj any) { c.updateNode(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { c.deleteNode(logger, obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return nil, err
	}
	cfg.Changes.AddChangeHandler(func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string) {
		c.remediationChanged(logger, gvr, obj, deleted, confirmed)
	})
	cfg.Changes.AddKindChangeHandler(func(gvr schema.GroupVersionResource, users []string) { c.kindChanged(logger, gvr, users) })
	if cfg.LeaseChanges != nil {
		if err := cfg.LeaseChanges.AddChangeHandler(func(node string, own bool, holders ...string) { c.leaseChanged(logger, node, own, holders) }); err != nil {
			return nil, fmt.Errorf("adding the node lease handler: %w", err)
		}
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

// nhcGone forgets what the controller kept about a deleted NodeHealthCheck.
func (c *Controller) nhcGone(name string) {
	c.pacing.ReadAtOnceFrom(name, time.Time{})
	c.catchUps.forget(name)
	c.observer.Forget(name)
	c.members.forget(name)
	c.written.Delete(name)
	c.unwritten.Delete(name)
	c.skips.forget(name)
	c.metrics.forget(name)
}
