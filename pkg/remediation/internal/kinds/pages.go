package kinds

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// listPage is how many objects a list of a kind asks for at a time. Where
// the API server does not stream an informer's initial list (its
// WatchList feature gate off: older releases, or turned off), the informer
// lists instead, and a list decoded whole holds every object whole before
// its transform drops what others' objects carry: 300 objects of 1 MiB
// are 300 MiB, and decoding them takes twice that again. In pages, each
// transformed as it comes, a list holds one page whole at most: 10 MiB of
// such objects, 76 MiB of high-water mark for a whole start (measured).
const listPage = 10

// newInformer is an informer of a kind whose objects are kept as keep
// makes them, listed in pages (listPage) and streamed where the API server
// streams.
func newInformer(client dynamic.Interface, gvr schema.GroupVersionResource, keep cache.TransformFunc, indexers cache.Indexers) cache.SharedIndexInformer {
	resource := client.Resource(gvr)
	informer := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
				return listInPages(ctx, resource, options, keep)
			},
			WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
				return resource.Watch(ctx, options)
			},
		}, client),
		&unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{Indexers: indexers, ObjectDescription: gvr.String()},
	)
	// Watch events, and a streamed initial list, are kept as they come.
	_ = informer.SetTransform(keep)
	return informer
}

// listInPages lists a kind listPage objects at a time from the API
// server's storage (a list served from its cache ignores the limit), and
// keeps each object as keep makes it before the next page is asked for.
func listInPages(ctx context.Context, resource dynamic.ResourceInterface, options metav1.ListOptions, keep cache.TransformFunc) (runtime.Object, error) {
	options.Limit, options.ResourceVersion, options.ResourceVersionMatch = listPage, "", ""
	kept := &unstructured.UnstructuredList{}
	for {
		page, err := resource.List(ctx, options)
		if err != nil {
			return nil, err
		}
		if kept.Object == nil {
			kept.Object = page.Object
		}
		for i := range page.Items {
			obj, err := keep(&page.Items[i])
			if err != nil {
				return nil, err
			}
			switch obj := obj.(type) {
			case *unstructured.Unstructured:
				kept.Items = append(kept.Items, *obj)
			case *shell:
				// A list holds objects: the shell's, which keep makes a
				// shell again as the informer stores it.
				kept.Items = append(kept.Items, *obj.unstructured())
			}
		}
		switch next := page.GetContinue(); next {
		case "":
			kept.SetResourceVersion(page.GetResourceVersion())
			kept.SetContinue("")
			return kept, nil
		case options.Continue:
			return nil, fmt.Errorf("listing %s: the API server answered a page with the token that asked for it", page.GetKind())
		default:
			options.Continue = next
		}
	}
}
