package gather

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// claims gathers what the overlap rule needs for a NodeHealthCheck's
// selected nodes: the other NodeHealthChecks whose selector matches a node
// (selecting: a Source lists those that may), whether each can act, from
// its object as decisions see it, and the owners of remediation resources
// for it. unknown says that remediation resources cannot all be known yet
// (Seen.ControlPlaneUnknown: after a start, the kinds of every
// NodeHealthCheck are not all watched and synced): meanwhile any
// NodeHealthCheck may be remediating the nodes it selects.
func claims(nodes []*nodeview.Node, others []*v1alpha1.NodeHealthCheck, selecting []health.SelectingPeer, h holders, unknown bool) map[string][]health.Claim {
	byUID := make(map[types.UID]*v1alpha1.NodeHealthCheck, len(others))
	for _, other := range others {
		byUID[other.UID] = other
	}
	selecting = slices.Clone(selecting)
	for i := range selecting {
		selecting[i].Unknown = unknown
		// Its status and pause requests change without a new selector:
		// read from the object, as the peer's own sync writes it.
		if other, ok := byUID[selecting[i].UID]; ok {
			selecting[i].CannotAct = health.CannotAct(other)
		}
	}
	return health.ClaimsOn(nodes, selecting, peersOf(h.owners, byUID), peersOf(h.holding, byUID))
}

// peersOf is, by node, the peers of owners.
func peersOf(owners map[string][]resource.Owner, byUID map[types.UID]*v1alpha1.NodeHealthCheck) map[string][]health.Peer {
	var peers map[string][]health.Peer
	for node, list := range owners {
		if peers == nil {
			peers = make(map[string][]health.Peer, len(owners))
		}
		for _, owner := range list {
			// One that is gone is known by its name alone: its resources
			// outlived it, and still hold the node.
			peer := health.Peer{Name: owner.Name, UID: owner.UID}
			if other, ok := byUID[owner.UID]; ok {
				peer = health.Peer{Name: other.Name, UID: other.UID, Created: other.CreationTimestamp.Time}
			}
			peers[node] = append(peers[node], peer)
		}
	}
	return peers
}
