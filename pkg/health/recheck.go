package health

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Why a planned creation is withdrawn just before it is sent.
const (
	withdrawnNHCGone     = "the NodeHealthCheck is gone"
	withdrawnSpecChanged = "the NodeHealthCheck's spec changed"
	withdrawnNHCChanged  = "the NodeHealthCheck changed at the API server since the plan was made"
	withdrawnNodeGone    = "the node is gone"
	withdrawnDeselected  = "the selector no longer selects the node"
	withdrawnExcluded    = "the node is excluded from remediation"
	withdrawnRecovered   = "the node no longer holds an unhealthy condition for its duration"
	withdrawnRoleChanged = "the node's control-plane role changed"
)

// Recheck says why a planned creation must not be sent after all, or ""
// when the node still needs it: the NodeHealthCheck and the node, read from
// the caches just before the create, are checked against what the plan saw.
// A plan creates one resource after another; a node may recover, get the
// exclude label or leave the selector meanwhile, and the NodeHealthCheck may
// be paused, edited or deleted (any spec change is a new generation). Its
// status is the controller's memory of the incident (the steps that timed
// out): a status stored since the plan was made (a write whose answer was
// lost, a watch that lags) is a stale picture too, which a new
// resourceVersion tells. Of the NodeHealthCheck, its metadata tells (nil:
// it is gone), which the API server can send alone.
func (p *Plan) Recheck(nhc *metav1.ObjectMeta, node *nodeview.Node, c Creation, now time.Time) string {
	switch {
	case nhc == nil || nhc.UID != p.decidedFrom.UID:
		return withdrawnNHCGone
	case nhc.Generation != p.decidedFrom.Generation:
		return withdrawnSpecChanged
	case nhc.ResourceVersion != p.decidedFrom.ResourceVersion:
		return withdrawnNHCChanged
	case node == nil:
		return withdrawnNodeGone
	case p.rules.selector == nil || !p.rules.selector.Matches(node.Labels):
		return withdrawnDeselected
	case excluded(node.Labels):
		return withdrawnExcluded
	case v1alpha1.IsControlPlane(node.Labels) != c.ControlPlane:
		return withdrawnRoleChanged
	case matchConditions(node, p.rules.conditions, now).expired == nil:
		return withdrawnRecovered
	}
	return ""
}
