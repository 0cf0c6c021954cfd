package health

import (
	"iter"
	"maps"
)

// One control-plane node at a time, so that etcd keeps its quorum.
//
// The busy set holds the control-plane nodes under remediation: the
// cluster's (Input.BusyControlPlaneNodes, which pkg/gather gathers from
// every NodeHealthCheck's resources, the creates under way and what cannot
// be read) and the nodes this evaluation finds or starts under
// remediation. A control-plane node gets a resource created only while no
// other node is in the set (AnotherControlPlaneNode), and all of them are
// known.

// AnotherControlPlaneNode tells whether a control-plane node other than
// node is among busy, the control-plane nodes under remediation: then node
// may not start. The evaluation asks it of its busy set, and the ledger of
// writes under way of the creates that hold the control-plane slot, since
// two syncs deciding from caches that do not show each other's create
// would otherwise both start one.
func AnotherControlPlaneNode(busy iter.Seq[string], node string) bool {
	for b := range busy {
		if b != node {
			return true
		}
	}
	return false
}

// noteControlPlane adds a node under remediation to the busy set when it is
// a control-plane node, or any of its resources says it is one (a node that
// lost its label, or is gone, may still be fenced).
func (e *evaluation) noteControlPlane(node string, controlPlane bool, resources []Remediation) {
	if controlPlane || anyControlPlane(resources) {
		e.busyControlPlane[node] = true
	}
}

func anyControlPlane(resources []Remediation) bool {
	for i := range resources {
		if resources[i].ControlPlane {
			return true
		}
	}
	return false
}

// controlPlaneGate says why a control-plane node may not get a resource
// created now, first or next step: a control-plane node whose timed-out
// step lost its resource is no longer in the busy set, and its next step
// must not start beside another control-plane node's remediation. A node
// that passes joins the set, whether its create goes in this plan or the
// next batch: no other control-plane node starts beside it.
func (e *evaluation) controlPlaneGate(v *NodeVerdict) WaitReason {
	switch {
	case !v.ControlPlane:
	case AnotherControlPlaneNode(maps.Keys(e.busyControlPlane), v.Node.Name):
		return WaitControlPlane
	case e.in.ControlPlaneUnknown != "":
		e.p.ControlPlaneUnknown = e.in.ControlPlaneUnknown
		return WaitControlPlaneUnknown
	default:
		e.busyControlPlane[v.Node.Name] = true
	}
	return WaitNone
}
