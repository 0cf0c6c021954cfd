package controller

import (
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// claims gathers what the overlap rule needs for a NodeHealthCheck's
// selected nodes: the other NodeHealthChecks whose selector matches a node,
// whether each can act (from its object as last read), and the owners of
// remediation resources for it. Only the selectors that are not disjoint
// from this one's are matched, so NodeHealthChecks with disjoint selectors
// cost a sync nothing. unknown says that remediation resources cannot all be
// known yet (Observation.ControlPlaneUnknown: after a start, the kinds of
// every NodeHealthCheck are not all watched and synced): meanwhile any
// NodeHealthCheck may be remediating the nodes it selects.
func (c *Controller) claims(nhc *v1alpha1.NodeHealthCheck, nodes []*health.Node, owners map[string][]resource.Owner, unknown bool) map[string][]health.Claim {
	s := c.selectors.get(c.nhcLister)
	var peers map[string][]health.Peer
	for node, list := range owners {
		if peers == nil {
			peers = make(map[string][]health.Peer, len(owners))
		}
		for _, owner := range list {
			peer, known := s.peers[owner.UID]
			if !known {
				// Its resources outlived it: they still hold the node.
				peer = health.Peer{Name: owner.Name, UID: owner.UID}
			}
			peers[node] = append(peers[node], peer)
		}
	}
	selecting := slices.Clone(s.peersOf(nhc))
	for i := range selecting {
		selecting[i].Unknown = unknown
		// Its status and pause requests change without a new selector: read
		// from the object, as the peer's own sync writes it.
		if other, err := c.nhcLister.Get(selecting[i].Name); err == nil && other.UID == selecting[i].UID {
			selecting[i].CannotAct = health.CannotAct(c.latest(other))
		}
	}
	return health.ClaimsOn(nodes, selecting, peers)
}

// enqueueSharing enqueues the NodeHealthChecks that may share nodes with
// one: who remediates a shared node may have changed.
func (c *Controller) enqueueSharing(nhc *v1alpha1.NodeHealthCheck) {
	for _, peer := range c.selectors.get(c.nhcLister).peersOf(nhc) {
		c.queue.Add(peer.Name)
	}
}
