package cli

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// claims gathers what the overlap rule needs for a NodeHealthCheck's
// selected nodes, as the controller does: the other NodeHealthChecks whose
// selector matches a node, whether each can act (from its object), and the
// owners of remediation resources for it, of the kinds any NodeHealthCheck
// uses, or of an incident under way on their record (health.HoldsOnRecord).
// Every kind is listed, so none is unknown.
func (c *cluster) claims(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, selected []*health.Node) map[string][]health.Claim {
	known := map[types.UID]health.Peer{}
	var peers []health.SelectingPeer
	for i := range c.all {
		other := &c.all[i]
		peer := health.Peer{Name: other.Name, UID: other.UID, Created: other.CreationTimestamp.Time}
		known[other.UID] = peer
		if other.Name == nhc.Name {
			continue
		}
		// An invalid selector matches no node.
		selector, _ := health.ParseSelector(&other.Spec.Selector)
		peers = append(peers, health.SelectingPeer{Peer: peer, Selector: selector, Conditions: other.Spec.UnhealthyConditions, CannotAct: health.CannotAct(other)})
	}
	owners := map[string][]health.Peer{}
	for node, list := range c.owners(ctx) {
		for _, owner := range list {
			if owner.UID == nhc.UID {
				continue
			}
			peer, ok := known[owner.UID]
			if !ok {
				// Its resources outlived it: they still hold the node.
				peer = health.Peer{Name: owner.Name, UID: owner.UID}
			}
			owners[node] = append(owners[node], peer)
		}
	}
	for i := range c.all {
		other := &c.all[i]
		if other.UID == nhc.UID {
			continue
		}
		for _, node := range health.NodesHeldOnRecord(other) {
			if !slices.ContainsFunc(owners[node], func(p health.Peer) bool { return p.UID == other.UID }) {
				owners[node] = append(owners[node], known[other.UID])
			}
		}
	}
	return health.ClaimsOn(selected, peers, owners)
}

// owners returns, by node, the NodeHealthChecks that own remediation
// resources of the kinds their templates generate, read once.
func (c *cluster) owners(ctx context.Context) map[string][]resource.Owner {
	if c.ownersByNode != nil {
		return c.ownersByNode
	}
	c.ownersByNode = map[string][]resource.Owner{}
	seen := map[types.UID]bool{}
	for i := range c.all {
		templates, _, unreadable := remediation.ReadTemplates(ctx, c.mapper, c.dynamic, c.all[i].Spec.TemplateRefs())
		for _, err := range unreadable {
			c.warn(err.Error())
		}
		for _, tmpl := range templates {
			for _, obj := range c.remediationResources(ctx, tmpl) {
				if seen[obj.GetUID()] {
					continue
				}
				seen[obj.GetUID()] = true
				node := resource.TargetNode(&obj)
				c.ownersByNode[node] = append(c.ownersByNode[node], resource.Owners(&obj)...)
			}
		}
	}
	return c.ownersByNode
}
