// Package nodecache is the controller's node informer: it keeps, of every
// Node, only what the controller reads (nodeview.Node), and decodes it that
// way straight from the API server's protobuf, so that the heartbeats of
// thousands of kubelets cost neither the decoding nor the garbage of whole
// Node objects.
package nodecache

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Informer is a shared informer of nodes as nodeview.Node, and its lister.
type Informer struct {
	informer cache.SharedIndexInformer
	lister   Lister
	pacing   *readPacing
	// lists reads nodes at the API server (Versions, Node) over the
	// controller's shared HTTP/2 connection; it is never paced.
	lists rest.Interface
	// initialList is the resourceVersion of the first initial list the
	// watch streamed, from the bookmark that ended it.
	initialList *atomic.Pointer[string]
}

// NewInformer returns the node informer. Its own REST client asks for
// protobuf, and decodes every node into a nodeview.Node as it arrives. Once
// synced, its reads are paced by batchWindow (see readPacing); 0 reads
// every update as it arrives.
func NewInformer(config *rest.Config, batchWindow time.Duration) (*Informer, error) {
	d := &decoder{labelTable: nodeview.NewLabelTable()}
	pacing := &readPacing{window: batchWindow, clock: clock.RealClock{}}
	config = rest.CopyConfig(config)
	config.GroupVersion = &corev1.SchemeGroupVersion
	config.APIPath = "/api"
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	// The reads share the controller's HTTP/2 connection: a storm's
	// confirmation reads, 50 at once, dialed 24 TLS connections over
	// HTTP/1.1.
	config.NegotiatedSerializer = newSerializers(d, nil, nil, nil)
	lists, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("the node client: %w", err)
	}
	// The watch has a connection of its own, over HTTP/1.1: it is read
	// where it is decoded, without HTTP/2's frame reader goroutine in
	// between and without a flow-control window update written back for
	// every node.
	config = rest.CopyConfig(config)
	initialList := &atomic.Pointer[string]{}
	heartbeats := newHeartbeats(nil)
	config.NegotiatedSerializer = newSerializers(d, func(resourceVersion string) {
		pacing.initialEventsEnded()
		initialList.CompareAndSwap(nil, &resourceVersion)
	}, heartbeats, pacing)
	config.TLSClientConfig.NextProtos = []string{"http/1.1"}
	config.Dial = nodeDialer().DialContext
	if batchWindow > 0 {
		config = rest.CopyConfig(config)
		config.Dial = pacing.dialer()
		config.Wrap(pacing.wrap)
	}
	client, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("the node client: %w", err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			heartbeats.forget()
			return client.Get().Resource("nodes").VersionedParams(&opts, kubeclient.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				heartbeats.forget()
			}
			return client.Get().Resource("nodes").VersionedParams(&opts, kubeclient.ParameterCodec).Watch(ctx)
		},
	}
	informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &nodeview.Node{},
		cache.SharedIndexInformerOptions{})
	indexer := informer.GetIndexer()
	cached := func(name string) *nodeview.Node {
		obj, _, _ := indexer.GetByKey(name)
		node, _ := obj.(*nodeview.Node)
		return node
	}
	d.previous, heartbeats.cached = cached, cached
	lister := Lister{indexer: indexer, heartbeats: heartbeats}
	return &Informer{informer: informer, lister: lister, pacing: pacing, lists: lists, initialList: initialList}, nil
}

// InitialListVersion is the resourceVersion of the consistent list the
// cache started from, once the cache holds it: every node that existed
// then is cached, at least as new, from then on (a relist replaces it with
// newer ones). It is "" before the cache has synced, and when the API
// server sent no bookmark to end the initial events (a plain LIST).
func (i *Informer) InitialListVersion() string {
	if i.initialList == nil || !i.informer.HasSynced() {
		return ""
	}
	if v := i.initialList.Load(); v != nil {
		return *v
	}
	return ""
}

// ReadAtOnceFrom records from when a NodeHealthCheck may create a
// remediation (zero: not at all): from then on, the informer reads node
// updates as they arrive, without the batch window.
func (i *Informer) ReadAtOnceFrom(nhc string, from time.Time) { i.pacing.attention.set(nhc, from) }

// Informer returns the shared informer.
func (i *Informer) Informer() cache.SharedIndexInformer { return i.informer }

// Lister returns the lister of its cache.
func (i *Informer) Lister() Lister { return i.lister }
