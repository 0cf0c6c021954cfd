package nodecache

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The node client's reads at the API server, beside the informer's watch.

// versionsPageSize bounds a page of Versions' list, and so the memory it
// takes at once.
const versionsPageSize = 500

// Versions lists at the API server the nodes a selector matches, with their
// resourceVersions: what the cache must show, at least as new, to have
// caught up with this moment. The list is consistent (no resourceVersion),
// its pages one snapshot.
func (i *Informer) Versions(ctx context.Context, selector labels.Selector) (map[string]string, error) {
	versions := map[string]string{}
	opts := metav1.ListOptions{LabelSelector: selector.String(), Limit: versionsPageSize}
	for {
		obj, err := i.lists.Get().Resource("nodes").VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Get()
		if err != nil {
			return nil, err
		}
		list, ok := obj.(*NodeList)
		if !ok {
			return nil, fmt.Errorf("listing nodes: decoded %T", obj)
		}
		for j := range list.Items {
			versions[list.Items[j].Name] = list.Items[j].ResourceVersion
		}
		if list.Continue == "" {
			return versions, nil
		}
		opts.Continue = list.Continue
	}
}

// Node reads a node at the API server, consistently (no resourceVersion):
// what a watch that lags behind cannot show yet.
func (i *Informer) Node(ctx context.Context, name string) (*health.Node, error) {
	obj, err := i.lists.Get().Resource("nodes").Name(name).Do(ctx).Get()
	if err != nil {
		return nil, err
	}
	node, ok := obj.(*health.Node)
	if !ok {
		return nil, fmt.Errorf("reading node %s: decoded %T", name, obj)
	}
	return node, nil
}
