package health

import (
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Why a planned creation is withdrawn just before it is sent.
const (
	withdrawnNHCGone     = "the NodeHealthCheck is gone"
	withdrawnSpecChanged = "the NodeHealthCheck's spec changed"
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
// be paused, edited or deleted (any spec change is a new generation). Of
// the NodeHealthCheck, only its identity and generation are read: the
// check at the API server reads its metadata alone.
func (p *Plan) Recheck(nhc *v1alpha1.NodeHealthCheck, node *Node, c Creation, now time.Time) string {
	switch {
	case nhc == nil || nhc.UID != p.decidedFrom.UID:
		return withdrawnNHCGone
	case nhc.Generation != p.decidedFrom.Generation:
		return withdrawnSpecChanged
	case node == nil:
		return withdrawnNodeGone
	case p.rules.selector == nil || !p.rules.selector.Matches(node.Labels):
		return withdrawnDeselected
	case node.Labels.Get(v1alpha1.ExcludeFromRemediationLabel) == "true":
		return withdrawnExcluded
	case v1alpha1.IsControlPlane(node.Labels) != c.ControlPlane:
		return withdrawnRoleChanged
	case matchConditions(node, p.rules.conditions, now).expired == nil:
		return withdrawnRecovered
	}
	return ""
}
