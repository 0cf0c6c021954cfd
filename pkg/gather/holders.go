package gather

import (
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// holders are who holds nodes besides the NodeHealthCheck gathered for.
type holders struct {
	// busyControlPlane is the busy set (health.Input.BusyControlPlaneNodes),
	// built here alone: the control-plane nodes with a remediation resource
	// of any owner, of any kind some NodeHealthCheck uses (quorum does not
	// care who remediates); those whose create holds the control-plane slot;
	// and those another NodeHealthCheck's status records a resource of, of
	// a kind that cannot be read now, when they are control-plane nodes or
	// gone. It is known once every NodeHealthCheck's kinds are watched, and
	// synced or stopped for a lasting error (Seen.ControlPlaneUnknown).
	busyControlPlane map[string]bool
	// owners are, by node, the other NodeHealthChecks with remediation
	// resources for it, and those whose status records a resource for it
	// of a kind that cannot be read now.
	owners map[string][]resource.Owner
	// holding are, by node, the other NodeHealthChecks that hold it by an
	// incident under way on their record (health.NodesHeldOnRecord).
	holding map[string][]resource.Owner
}

// nodeReader reads a node; a NotFound error when it is gone.
type nodeReader interface {
	Node(name string) (*nodeview.Node, error)
}

// holdersOf reads who holds nodes from what the remediation resources show
// and from the statuses of the other NodeHealthChecks.
//
// After a restart, a kind whose cache cannot be read (not synced yet,
// failing, or stopped for a lasting reason: forbidden) shows nothing, not
// even what it showed before; the status, which only the controller writes
// and only from what the API server showed, is then the record of the
// nodes a NodeHealthCheck remediates: they stay busy, for quorum and for
// every other NodeHealthCheck, until the kind can be read again. A node
// that is gone may have been a control-plane node: the status does not
// say, and the resource may still fence it.
func holdersOf(others []*v1alpha1.NodeHealthCheck, seen *Seen, nodes nodeReader) holders {
	h := holders{busyControlPlane: map[string]bool{}, owners: maps.Clone(seen.OtherOwners)}
	for _, node := range seen.ControlPlane {
		h.busyControlPlane[node] = true
	}
	for _, node := range seen.Reserved {
		h.busyControlPlane[node] = true
	}
	for _, other := range others {
		owner := resource.Owner{Name: other.Name, UID: other.UID}
		for _, node := range health.NodesHeldOnRecord(other) {
			h.holding = addOwner(h.holding, node, owner)
		}
	}
	for node, owners := range recordedUnreadable(others, seen.Unreadable) {
		for _, owner := range owners {
			h.owners = addOwner(h.owners, node, owner)
		}
		if mayBeControlPlane(node, nodes) {
			h.busyControlPlane[node] = true
		}
	}
	return h
}

// addOwner adds an owner of a node's remediation, once.
func addOwner(owners map[string][]resource.Owner, node string, owner resource.Owner) map[string][]resource.Owner {
	if slices.Contains(owners[node], owner) {
		return owners
	}
	if owners == nil {
		owners = map[string][]resource.Owner{}
	}
	owners[node] = append(owners[node], owner)
	return owners
}

// recordedUnreadable returns, by node, the NodeHealthChecks whose status
// records a remediation resource of an unreadable kind.
func recordedUnreadable(nhcs []*v1alpha1.NodeHealthCheck, unreadable map[schema.GroupVersionKind]bool) map[string][]resource.Owner {
	var owners map[string][]resource.Owner
	for _, nhc := range nhcs {
		owner := resource.Owner{Name: nhc.Name, UID: nhc.UID}
		for node, rem := range nhc.Status.RecordedRemediations() {
			if !unreadable[rem.Resource.GroupVersionKind()] || slices.Contains(owners[node], owner) {
				continue
			}
			if owners == nil {
				owners = map[string][]resource.Owner{}
			}
			owners[node] = append(owners[node], owner)
		}
	}
	return owners
}

// mayBeControlPlane tells whether a node is a control-plane node, or may
// have been: it is gone.
func mayBeControlPlane(node string, nodes nodeReader) bool {
	n, err := nodes.Node(node)
	return apierrors.IsNotFound(err) || err == nil && v1alpha1.IsControlPlane(n.Labels)
}

// gone tells whether a node's object no longer exists.
func gone(node string, nodes nodeReader) bool {
	_, err := nodes.Node(node)
	return apierrors.IsNotFound(err)
}
