package nodecache

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
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
		result := i.lists.Get().Resource("nodes").VersionedParams(&opts, kubeclient.ParameterCodec).Do(ctx)
		raw, err := result.Raw()
		if err != nil {
			return nil, err
		}
		next, err := nodeVersions(raw, versions)
		if errors.Is(err, errNotCanonical) {
			next, err = decodedVersions(result, versions)
		}
		if err != nil {
			return nil, err
		}
		if next == "" {
			return versions, nil
		}
		opts.Continue = next
	}
}

// nodeVersions reads the names and resourceVersions of a protobuf
// NodeList's items into versions, and returns its continue token. It reads
// nothing else: a whole decode of every selected node costs a new
// NodeHealthCheck's first sync at 10,000 nodes seconds of CPU and tens of
// MiB.
func nodeVersions(data []byte, versions map[string]string) (string, error) {
	kind, body, err := unwrap(data)
	if err != nil || string(kind) != nodeListKind.Kind {
		return "", errNotCanonical
	}
	var meta metav1.ListMeta
	r := reader{b: body}
	for r.next() {
		if (r.num == listMetadata || r.num == listItems) && r.typ != protowire.BytesType {
			return "", errNotCanonical
		}
		switch r.num {
		case listMetadata:
			if err := listMeta(r.val, &meta); err != nil {
				return "", err
			}
		case listItems:
			name, version, err := nameAndVersion(r.val)
			if err != nil {
				return "", err
			}
			versions[name] = version
		}
	}
	return meta.Continue, r.err
}

// nameAndVersion reads a Node's name and resourceVersion.
func nameAndVersion(node []byte) (name, version string, err error) {
	r := reader{b: node}
	for r.next() {
		if r.num != nodeMetadata {
			continue
		}
		if r.typ != protowire.BytesType {
			return "", "", errNotCanonical
		}
		meta := reader{b: r.val}
		for meta.next() {
			switch meta.num {
			case metaName:
				name = string(meta.val)
			case metaResourceVersion:
				version = string(meta.val)
			}
		}
		if meta.err != nil {
			return "", "", meta.err
		}
	}
	return name, version, r.err
}

// decodedVersions reads a list the general decoder decodes: JSON, or what
// the protobuf reader declines.
func decodedVersions(result rest.Result, versions map[string]string) (string, error) {
	obj, err := result.Get()
	if err != nil {
		return "", err
	}
	list, ok := obj.(*NodeList)
	if !ok {
		return "", fmt.Errorf("listing nodes: decoded %T", obj)
	}
	for j := range list.Items {
		versions[list.Items[j].Name] = list.Items[j].ResourceVersion
	}
	return list.Continue, nil
}

// Node reads a node at the API server as a list of the one node by name,
// which the API server serves from its watch cache (a get reads and decodes
// the node from etcd: in a storm, under the kubelets' writes, a get waited
// there two to three times as long). With notOlderThan "" the read is
// consistent: the cache first catches up with etcd's revision of the
// moment. Else it is at least as new as notOlderThan, the resourceVersion
// of an earlier list of nodes. It returns the list's resourceVersion too,
// with a NotFound error when the node does not exist.
func (i *Informer) Node(ctx context.Context, name, notOlderThan string) (*nodeview.Node, string, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	if notOlderThan != "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = notOlderThan, metav1.ResourceVersionMatchNotOlderThan
	}
	obj, err := i.lists.Get().Resource("nodes").VersionedParams(&opts, kubeclient.ParameterCodec).Do(ctx).Get()
	if err != nil {
		return nil, "", err
	}
	list, ok := obj.(*NodeList)
	if !ok {
		return nil, "", fmt.Errorf("reading node %s: decoded %T", name, obj)
	}
	for j := range list.Items {
		if list.Items[j].Name == name {
			return &list.Items[j], list.ResourceVersion, nil
		}
	}
	return nil, list.ResourceVersion, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}
