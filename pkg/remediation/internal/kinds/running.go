package kinds

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/watcherrors"
)

// One kind's informer: what is kept of it while it runs or after it
// stopped, how it starts, and how its events are handed on.

type runningInformer struct {
	informer cache.SharedIndexInformer
	// metadataOnly is set for a template kind's informer, which caches
	// metadata alone (Keep's shells).
	metadataOnly bool
	stop         context.CancelFunc
	started      time.Time
	errors       watcherrors.Errors
	// retried is the error that stopped the informer before this retry:
	// it stands until the informer syncs, and a retry that fails the same
	// way stops at once.
	retried error
	// remembered is what the cache of the kind showed when it was stopped:
	// busy until this retry syncs.
	remembered shown
	// looking is set for an informer started to look for remediation
	// resources that outlived their NodeHealthCheck (leftovers.go), until
	// it synced and was stopped or kept for what it shows; mu guards it.
	looking bool
}

type stoppedInformer struct {
	err     error
	retryAt time.Time
	// shown is what its cache showed when it stopped (after it had synced,
	// or as remembered from an earlier stop): those nodes stay busy while
	// the kind cannot be read.
	shown shown
}

// start starts a kind's informer; stopped is how it was stopped before, if
// this is a retry.
func (inf *Informers) start(gvr schema.GroupVersionResource, stopped stoppedInformer) *runningInformer {
	metadataOnly := inf.templatesOnly(gvr)
	client := inf.client
	if metadataOnly {
		client = inf.metadata
	}
	informer := newInformer(client, gvr, inf.keeper(gvr, metadataOnly), cache.Indexers{
		ownerIndex:        indexByOwner,
		controlPlaneIndex: indexByControlPlaneNode,
		nodeIndex:         indexByNode,
	})
	r := &runningInformer{informer: informer, metadataOnly: metadataOnly, started: inf.clock.Now(), retried: stopped.err, remembered: stopped.shown}
	r.errors.Record(informer, func(err error) { inf.failed(gvr, r, err) })
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { inf.notify(gvr, obj, false) },
		UpdateFunc: func(_, obj any) { inf.notify(gvr, obj, false) },
		DeleteFunc: func(obj any) {
			inf.notify(gvr, obj, true)
			inf.mu.Lock()
			defer inf.mu.Unlock()
			if inf.running[gvr] == r {
				inf.stopIfUnused(gvr)
			}
		},
	})
	ctx, stop := context.WithCancel(inf.ctx)
	r.stop = stop
	go informer.RunWithContext(ctx)
	go func() {
		// Every NodeHealthCheck hears of it: a control-plane remediation of
		// this kind may hold back any of them.
		if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			inf.mu.Lock()
			r.looking = false
			if !r.metadataOnly {
				delete(inf.unread, gvr)
			}
			if inf.running[gvr] == r {
				inf.stopIfUnused(gvr)
			}
			inf.mu.Unlock()
			inf.kindChanged(gvr, nil)
		}
	}()
	klog.FromContext(inf.ctx).V(2).Info(logStarted, "resource", gvr)
	return r
}

func (inf *Informers) kindChanged(gvr schema.GroupVersionResource, users []string) {
	inf.mu.Lock()
	handlers := inf.kindHandlers
	inf.mu.Unlock()
	for _, handle := range handlers {
		handle(gvr, users)
	}
}

func (inf *Informers) notify(gvr schema.GroupVersionResource, obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	inf.mu.Lock()
	handlers := inf.handlers
	inf.mu.Unlock()
	for _, handle := range handlers {
		handle(gvr, u, deleted)
	}
}

func (v View) informer(gvr schema.GroupVersionResource) *runningInformer {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running[gvr]
}
