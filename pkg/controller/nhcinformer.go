package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
)

// unreadableAnnotation marks, in the controller's cache only, a
// NodeHealthCheck that the API server stored but that cannot be decoded, for
// example a duration that overflows, stored under an older CRD. Its value is
// the decoding error. Such an object is never written back whole.
const unreadableAnnotation = "nhc-controller.medik8s.io/unreadable"

// NewNodeHealthCheckInformer returns a NodeHealthCheck informer whose
// client decodes each object on its own. The generated informer decodes a
// whole list at once: one object it cannot decode fails the list, and with
// it every NodeHealthCheck. Here such an object becomes a placeholder with
// its metadata and the error, which Sync reports on that object alone. An
// object that decodes, every one but such, is decoded once, straight into
// its type: each status the controller writes comes back through the
// watch, and read through a dynamic client it was decoded three times.
func NewNodeHealthCheckInformer(config *rest.Config) (NodeHealthCheckInformer, error) {
	answered := &atomic.Pointer[answeredLookup]{}
	client, err := objectByObjectClient(config, answered)
	if err != nil {
		return nil, err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			return client.Get().Resource("nodehealthchecks").VersionedParams(&options, nhcscheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			var timeout time.Duration
			if options.TimeoutSeconds != nil {
				timeout = time.Duration(*options.TimeoutSeconds) * time.Second
			}
			options.Watch = true
			return client.Get().Resource("nodehealthchecks").VersionedParams(&options, nhcscheme.ParameterCodec).Timeout(timeout).Watch(ctx)
		},
	}
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1alpha1.NodeHealthCheck{}, 0, cache.Indexers{})
	if err := informer.SetTransform(withoutManagedFields); err != nil {
		return nil, err
	}
	return nhcInformer{informer: informer, answered: answered}, nil
}

// withoutManagedFields drops a NodeHealthCheck's managedFields, which the
// controller never reads: the API server takes a status write's from the
// stored object, whatever it is sent, and the unhealthy nodes' entries
// grow them. An object that has none, such as the answered object the
// watch takes, is not written to.
func withoutManagedFields(obj any) (any, error) {
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		dropManagedFields(nhc)
	}
	return obj, nil
}

// dropManagedFields drops a NodeHealthCheck's managedFields, writing to it
// only when it has some.
func dropManagedFields(nhc *v1alpha1.NodeHealthCheck) {
	if nhc.ManagedFields != nil {
		nhc.ManagedFields = nil
	}
}

// answeredLookup returns the NodeHealthCheck of that name and
// resourceVersion as the API server answered this controller's write of
// it, or nil.
type answeredLookup func(name, resourceVersion string) *v1alpha1.NodeHealthCheck

// objectByObjectClient is a REST client of the remediation group whose
// decoder decodes what it can as the typed client does, and what it cannot
// object by object (objectByObject).
func objectByObjectClient(config *rest.Config, answered *atomic.Pointer[answeredLookup]) (rest.Interface, error) {
	cfg := rest.CopyConfig(config)
	cfg.GroupVersion = &v1alpha1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	serializers := nhcscheme.Codecs.WithoutConversion()
	cfg.NegotiatedSerializer = objectByObjectSerializer{NegotiatedSerializer: serializers, answered: answered,
		infos: withSplittingWatchEvents(serializers.SupportedMediaTypes())}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(cfg)
}

// objectByObjectSerializer is the scheme's serializer with objectByObject
// decoders, and splittingWatchEvents for the JSON watch's events.
type objectByObjectSerializer struct {
	runtime.NegotiatedSerializer
	answered *atomic.Pointer[answeredLookup]
	infos    []runtime.SerializerInfo
}

func (s objectByObjectSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

func (s objectByObjectSerializer) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return objectByObject{Decoder: s.NegotiatedSerializer.DecoderToVersion(decoder, gv), answered: s.answered}
}

// objectByObject decodes as its decoder does; a NodeHealthCheck, or a list
// of them, that it cannot decode is decoded object by object, each that
// fails as a placeholder (decodeNodeHealthCheck). A NodeHealthCheck that
// the API server answered a write of this controller with, at the same
// resourceVersion, is not decoded again: each status write comes back
// through the watch, and a status with a full history takes half a
// millisecond to decode.
type objectByObject struct {
	runtime.Decoder
	// answered, when it holds a lookup, finds the answered objects.
	answered *atomic.Pointer[answeredLookup]
}

func (d objectByObject) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if nhc := d.answeredObject(data); nhc != nil {
		return nhc, ptr.To(v1alpha1.SchemeGroupVersion.WithKind("NodeHealthCheck")), nil
	}
	obj, gvk, err := d.Decoder.Decode(data, defaults, into)
	if err == nil {
		return obj, gvk, nil
	}
	u := &unstructured.Unstructured{}
	if u.UnmarshalJSON(data) != nil || u.GroupVersionKind().GroupVersion() != v1alpha1.SchemeGroupVersion {
		return obj, gvk, err
	}
	if !u.IsList() {
		nhc := decodeNodeHealthCheck(u)
		return nhc, ptr.To(nhc.GroupVersionKind()), nil
	}
	items, listErr := u.ToList()
	if listErr != nil {
		return obj, gvk, err
	}
	list := &v1alpha1.NodeHealthCheckList{ListMeta: metav1.ListMeta{
		ResourceVersion: items.GetResourceVersion(), Continue: items.GetContinue(), RemainingItemCount: items.GetRemainingItemCount(),
	}}
	for i := range items.Items {
		list.Items = append(list.Items, *decodeNodeHealthCheck(&items.Items[i]))
	}
	list.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("NodeHealthCheckList"))
	return list, ptr.To(list.GroupVersionKind()), nil
}

// answeredObject returns the answered NodeHealthCheck whose name and
// resourceVersion the data's metadata holds, or nil. An object's
// resourceVersion names one version of it: the data holds what the answer
// held.
func (d objectByObject) answeredObject(data []byte) *v1alpha1.NodeHealthCheck {
	if d.answered == nil {
		return nil
	}
	lookup := d.answered.Load()
	if lookup == nil {
		return nil
	}
	meta, ok := peekMetadata(data)
	if !ok || meta.Name == "" || meta.ResourceVersion == "" {
		return nil
	}
	return (*lookup)(meta.Name, meta.ResourceVersion)
}

// peekedMetadata is what peekMetadata reads of an object's metadata.
type peekedMetadata struct {
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
}

// peekMetadata reads the name and resourceVersion of a JSON object's
// metadata, which the API server writes before its spec and status,
// skipping the rest unread.
func peekMetadata(data []byte) (peekedMetadata, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return peekedMetadata{}, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return peekedMetadata{}, false
		}
		if key == "metadata" {
			var meta peekedMetadata
			return meta, dec.Decode(&meta) == nil
		}
		var skipped json.RawMessage
		if dec.Decode(&skipped) != nil {
			return peekedMetadata{}, false
		}
	}
	return peekedMetadata{}, false
}

// NodeHealthCheckInformer is an informer of NodeHealthChecks and its
// lister, as the generated informers have.
type NodeHealthCheckInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() nhclisters.NodeHealthCheckLister
}

type nhcInformer struct {
	informer cache.SharedIndexInformer
	answered *atomic.Pointer[answeredLookup]
}

// ReuseAnswered makes the informer take the objects lookup finds, as the
// API server answered this controller's writes, instead of decoding them
// again from the watch.
func (i nhcInformer) ReuseAnswered(lookup answeredLookup) { i.answered.Store(&lookup) }

func (i nhcInformer) Informer() cache.SharedIndexInformer { return i.informer }

func (i nhcInformer) Lister() nhclisters.NodeHealthCheckLister {
	return nhclisters.NewNodeHealthCheckLister(i.informer.GetIndexer())
}

// decodeNodeHealthCheck decodes an object as the typed client would, or
// returns a placeholder with its metadata and the error.
func decodeNodeHealthCheck(u *unstructured.Unstructured) *v1alpha1.NodeHealthCheck {
	data, err := u.MarshalJSON()
	if err == nil {
		nhc := &v1alpha1.NodeHealthCheck{}
		if _, _, err = nhcscheme.Codecs.UniversalDeserializer().Decode(data, nil, nhc); err == nil {
			return nhc
		}
	}
	placeholder := &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{
		Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration(),
		CreationTimestamp: u.GetCreationTimestamp(), DeletionTimestamp: u.GetDeletionTimestamp(),
		Labels: u.GetLabels(), Annotations: map[string]string{unreadableAnnotation: err.Error()},
	}}
	placeholder.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("NodeHealthCheck"))
	return placeholder
}

// unreadable returns why a cached NodeHealthCheck could not be decoded.
func unreadable(nhc *v1alpha1.NodeHealthCheck) (string, bool) {
	reason, ok := nhc.Annotations[unreadableAnnotation]
	return reason, ok
}
