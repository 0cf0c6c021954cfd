package nodecache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Informer is the node informer: trimmed nodes (see Trim), their lister,
// and the handlers it calls itself, in the loop that stores each event. A
// shared informer hands every event to a goroutine per handler through two
// more goroutines: at a kubelet's cadence each hand-off wakes a thread, which
// cost more than decoding the node.
type Informer struct {
	controller cache.Controller
	indexer    cache.Indexer
	lister     corelisters.NodeLister
	// handlers hear of every event in order; they are added before Run.
	handlers []cache.ResourceEventHandler
	started  atomic.Bool
}

// NewInformer returns the node informer. Its own REST client asks for
// protobuf, and decodes every node trimmed as it arrives.
func NewInformer(config *rest.Config) (*Informer, error) {
	d := &decoder{}
	config = rest.CopyConfig(config)
	config.GroupVersion = &corev1.SchemeGroupVersion
	config.APIPath = "/api"
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	config.NegotiatedSerializer = newSerializers(d)
	// HTTP/1.1: the watch is read where it is decoded, without HTTP/2's
	// frame reader goroutine in between and without a flow-control
	// window update written back for every node.
	config.TLSClientConfig.NextProtos = []string{"http/1.1"}
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("the node client: %w", err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.Get().Resource("nodes").VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return client.Get().Resource("nodes").VersionedParams(&opts, scheme.ParameterCodec).Watch(ctx)
		},
	}
	i := &Informer{}
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    &corev1.Node{},
		Handler:       dispatcher{i},
		Indexers:      cache.Indexers{},
	})
	i.controller, i.indexer = controller, store.(cache.Indexer)
	i.lister = corelisters.NewNodeLister(i.indexer)
	d.previous = func(name string) *corev1.Node {
		obj, ok, _ := i.indexer.GetByKey(name)
		node, _ := obj.(*corev1.Node)
		if !ok {
			return nil
		}
		return node
	}
	return i, nil
}

// AddEventHandler adds a handler; it must come before Run.
func (i *Informer) AddEventHandler(handler cache.ResourceEventHandler) error {
	if i.started.Load() {
		return errors.New("nodecache: a handler added after the informer started")
	}
	i.handlers = append(i.handlers, handler)
	return nil
}

// Run lists and watches nodes until ctx ends.
func (i *Informer) Run(ctx context.Context) {
	i.started.Store(true)
	i.controller.RunWithContext(ctx)
}

// HasSynced tells whether the initial nodes are stored and every handler
// has heard of them.
func (i *Informer) HasSynced() bool { return i.controller.HasSynced() }

// Lister returns the lister of its cache.
func (i *Informer) Lister() corelisters.NodeLister { return i.lister }

// dispatcher calls the informer's handlers in order.
type dispatcher struct{ i *Informer }

func (d dispatcher) OnAdd(obj any, isInInitialList bool) {
	for _, h := range d.i.handlers {
		h.OnAdd(obj, isInInitialList)
	}
}

func (d dispatcher) OnUpdate(oldObj, newObj any) {
	for _, h := range d.i.handlers {
		h.OnUpdate(oldObj, newObj)
	}
}

func (d dispatcher) OnDelete(obj any) {
	for _, h := range d.i.handlers {
		h.OnDelete(obj)
	}
}
