package nodecache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// NodeOf is nodeview.Of, sharing labels with no other node.
func NodeOf(node *corev1.Node) *nodeview.Node {
	return nodeview.Of(node, nil)
}
