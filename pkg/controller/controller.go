// Package controller runs NodeHealthChecks: shared informers for Nodes and
// NodeHealthChecks, dynamic informers for templates and remediation
// resources, and a rate-limited workqueue of NodeHealthCheck names whose
// sync evaluates with pkg/health and acts with pkg/remediation.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	nhcinformers "github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// QueueName names the workqueue, and so its workqueue_* metrics.
const QueueName = "nodehealthcheck"

// notReadyRequeue is how soon a NodeHealthCheck whose informers have not
// synced, or whose own writes are not visible yet, is tried again. The
// informer events usually come first.
const notReadyRequeue = time.Second

// problemRequeue is how soon a NodeHealthCheck that cannot be evaluated is
// looked at again, besides the events that wake it.
const problemRequeue = 10 * time.Second

// syncTimeout bounds the API calls of one sync.
const syncTimeout = time.Minute

// Controller runs NodeHealthChecks.
type Controller struct {
	nhcClient versioned.Interface
	nhcLister nhclisters.NodeHealthCheckLister
	// nhcIndexer finds NodeHealthChecks by the templates they reference.
	nhcIndexer cache.Indexer
	nhcSynced  cache.InformerSynced
	nodeLister corelisters.NodeLister
	nodeSynced cache.InformerSynced

	informers    *remediation.Informers
	expectations *remediation.Expectations
	remediations *remediation.Manager

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	clock    clock.Clock
	metrics  *Metrics

	selectors *selectorCache
	// written holds the NodeHealthChecks as this controller last wrote them,
	// for syncs that run before the informer shows the write.
	written sync.Map
	// skips remembers which skip events were emitted, to emit them once.
	skips *skipMemory
}

// New returns a controller. The informers must not have started yet, so that
// the controller's indexer can be added.
func New(ctx context.Context, kubeClient kubernetes.Interface, nhcClient versioned.Interface, dynamicClient dynamic.Interface,
	mapper meta.ResettableRESTMapper, nodeInformer coreinformers.NodeInformer, nhcInformer nhcinformers.NodeHealthCheckInformer,
	recorder record.EventRecorder, metrics *Metrics, clk clock.WithTicker) (*Controller, error) {
	c := &Controller{
		nhcClient:  nhcClient,
		nhcLister:  nhcInformer.Lister(),
		nhcIndexer: nhcInformer.Informer().GetIndexer(),
		nhcSynced:  nhcInformer.Informer().HasSynced,
		nodeLister: nodeInformer.Lister(),
		nodeSynced: nodeInformer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: clk},
		),
		recorder:  recorder,
		clock:     clk,
		metrics:   metrics,
		selectors: newSelectorCache(),
		skips:     newSkipMemory(),
	}
	c.expectations = remediation.NewExpectations(clk)
	c.informers = remediation.NewInformers(ctx, dynamicClient, c.onRemediationChange)
	c.remediations = remediation.NewManager(c.informers, remediation.NewTemplates(mapper, c.informers, clk),
		c.expectations, remediation.NewWriter(dynamicClient, kubeClient), clk)

	if err := nhcInformer.Informer().AddIndexers(cache.Indexers{templateIndex: indexByTemplate}); err != nil {
		return nil, fmt.Errorf("adding the template index: %w", err)
	}
	if err := nodeInformer.Informer().SetTransform(TrimNode); err != nil {
		return nil, fmt.Errorf("setting the node transform: %w", err)
	}
	if _, err := nhcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNHCAdd,
		UpdateFunc: c.onNHCUpdate,
		DeleteFunc: c.onNHCDelete,
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNodeAdd,
		UpdateFunc: c.onNodeUpdate,
		DeleteFunc: c.onNodeDelete,
	}); err != nil {
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
		c.queue.ShutDown()
		return fmt.Errorf("caches did not sync")
	}
	logger.Info("Starting workers", "count", workers)
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
// rate limiter; a deadline in the decision requeues with AddAfter, whichever
// comes first.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	requeueAfter, err := c.sync(ctx, name)
	if err != nil {
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

func (c *Controller) enqueue(name string) {
	c.queue.Add(name)
}

// nhcGone forgets what the controller kept about a deleted NodeHealthCheck.
func (c *Controller) nhcGone(name string) {
	c.informers.Use(name)
	c.expectations.Forget(name)
	c.written.Delete(name)
	c.skips.forget(name)
	c.metrics.forget(name)
}
