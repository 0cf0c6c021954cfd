package controller

import (
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// claims gathers what the overlap rule needs for a NodeHealthCheck's
// selected nodes: the other NodeHealthChecks whose selector matches a node,
// and the owners of remediation resources for it. Only the selectors that
// are not disjoint from this one's are matched, so NodeHealthChecks with
// disjoint selectors cost a sync nothing.
func (c *Controller) claims(nhc *v1alpha1.NodeHealthCheck, nodes []*health.Node, owners map[string][]remediation.Owner) map[string][]health.Claim {
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
		// Its resources may be of kinds not watched yet (the controller
		// just started): it may be remediating the nodes it selects.
		uid, read := c.readNHCs.Load(selecting[i].Name)
		selecting[i].Unknown = !read || uid != selecting[i].UID
	}
	return health.ClaimsOn(nodes, selecting, peers)
}

// markRead remembers that a NodeHealthCheck's remediation resources have
// been read: the informers of its kinds run and have synced. The first time,
// the NodeHealthChecks that may share its nodes are synced again, since
// they took it for remediating the shared nodes.
func (c *Controller) markRead(nhc *v1alpha1.NodeHealthCheck) {
	if uid, read := c.readNHCs.Swap(nhc.Name, nhc.UID); read && uid == nhc.UID {
		return
	}
	for _, peer := range c.selectors.get(c.nhcLister).peersOf(nhc) {
		c.queue.Add(peer.Name)
	}
}
