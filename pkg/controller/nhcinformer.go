package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
)

// unreadableAnnotation marks, in the controller's cache only, a
// NodeHealthCheck that the API server stored but that cannot be decoded, for
// example a duration that overflows, stored under an older CRD. Its value is
// the decoding error. Such an object is never written back whole.
const unreadableAnnotation = "nhc-controller.medik8s.io/unreadable"

// NewNodeHealthCheckInformer returns a NodeHealthCheck informer that lists
// and watches through the dynamic client and decodes each object on its own.
// The generated informer decodes a whole list at once: one object it cannot
// decode fails the list, and with it every NodeHealthCheck. Here such an
// object becomes a placeholder with its metadata and the error, which Sync
// reports on that object alone.
func NewNodeHealthCheckInformer(client dynamic.Interface) NodeHealthCheckInformer {
	resource := client.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodehealthchecks"))
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			list, err := resource.List(ctx, options)
			if err != nil {
				return nil, err
			}
			decoded := &v1alpha1.NodeHealthCheckList{ListMeta: metav1.ListMeta{
				ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue(), RemainingItemCount: list.GetRemainingItemCount(),
			}}
			for i := range list.Items {
				decoded.Items = append(decoded.Items, *decodeNodeHealthCheck(&list.Items[i]))
			}
			return decoded, nil
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			w, err := resource.Watch(ctx, options)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if u, ok := e.Object.(*unstructured.Unstructured); ok {
					e.Object = decodeNodeHealthCheck(u)
				}
				return e, true
			}), nil
		},
	}
	return nhcInformer{cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1alpha1.NodeHealthCheck{}, 0, cache.Indexers{})}
}

// NodeHealthCheckInformer is an informer of NodeHealthChecks and its
// lister, as the generated informers have.
type NodeHealthCheckInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() nhclisters.NodeHealthCheckLister
}

type nhcInformer struct {
	informer cache.SharedIndexInformer
}

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
