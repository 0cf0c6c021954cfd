package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// The node as decisions read it is nodeview's; these are its names as the
// callers of pkg/health still spell them.
type (
	Node          = nodeview.Node
	NodeCondition = nodeview.Condition
	Labels        = nodeview.Labels
)

// NewNodeCondition is nodeview.NewCondition.
func NewNodeCondition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus, transition time.Time) NodeCondition {
	return nodeview.NewCondition(conditionType, status, transition)
}

// LabelsOf is nodeview.LabelsOf, sharing nothing.
func LabelsOf(name string, labels map[string]string) Labels {
	return nodeview.LabelsOf(name, labels, nil)
}
