package gather

import (
	"iter"
	"maps"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// LeaveOut says which selected nodes a Source may leave out of a
// decision's nodes and count as quiet: those the quietness of the
// NodeHealthCheck's spec calls quiet (health.QuietnessOf) and none of
// Named names.
type LeaveOut struct {
	// Named are the nodes the decision looks up by name, which are never
	// left out; a name may come more than once.
	Named []iter.Seq[string]
}

// Selection is what a Source selects for a decision.
type Selection struct {
	// Nodes are the selected nodes, but those left out as quiet.
	Nodes []*nodeview.Node
	// Quiet counts the selected nodes left out of Nodes as quiet.
	Quiet int
	// CaughtUp false says that the nodes cannot be known yet (the node
	// cache is behind the API server for a first evaluation): Nodes is
	// empty then.
	CaughtUp bool
}

// leaveOutOf is what a Source may leave out of a NodeHealthCheck's nodes:
// nothing while another NodeHealthCheck may select them, as the overlap
// counts every shared node, quiet or not; else the quiet nodes that the
// input gathered so far and the holders do not name. Without selecting
// peers, a node's claims are its holders' (claims), so the named nodes are
// those the whole input names (health.NamedNodes).
func leaveOutOf(in *health.Input, peers []health.SelectingPeer, h holders) *LeaveOut {
	if len(peers) > 0 {
		return nil
	}
	return &LeaveOut{Named: []iter.Seq[string]{health.NamedNodes(in), maps.Keys(h.owners), maps.Keys(h.holding)}}
}
