package nodecache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// NodeList is a list of nodes as the cache keeps them, what the informer's
// List decodes.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NodeList struct {
	// ListMeta has the resourceVersion, continue token and remaining item
	// count that the informer's list reads.
	metav1.ListMeta
	Items []nodeview.Node
}

// GetObjectKind is empty, as for nodeview.Node.
func (*NodeList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
