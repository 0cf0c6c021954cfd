package remediation

import (
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// readRecorded adds to the other owners the NodeHealthChecks whose status
// records a remediation resource of a kind whose cache cannot be read: not
// synced yet, failing, or stopped for a lasting reason (forbidden). After a
// restart, such a kind shows nothing, not even what it showed before (what
// kinds.Informers remembers of a stopped kind); the status, which only the
// controller writes and only from what the API server showed, is then the
// record of the nodes it remediates: they stay busy, for quorum and for
// every other NodeHealthCheck, until the kind can be read again. A node
// that is gone may have been a control-plane node: the status does not
// say, and the resource may still fence it. It adds too the nodes another
// NodeHealthCheck holds by an incident under way on its record
// (health.HoldsOnRecord), whose step's resource is gone.
func (o *Observer) readRecorded(obs *Observation, others []*v1alpha1.NodeHealthCheck) {
	for _, nhc := range others {
		owner := resource.Owner{Name: nhc.Name, UID: nhc.UID}
		for _, node := range health.NodesHeldOnRecord(nhc) {
			obs.addOtherOwner(node, owner)
		}
	}
	for node, owners := range o.recorded(others) {
		for _, owner := range owners {
			obs.addOtherOwner(node, owner)
		}
		if o.mayBeControlPlane(node) {
			obs.BusyControlPlaneNodes[node] = true
		}
	}
}

// addOtherOwner adds an owner of a node's remediation, once.
func (obs *Observation) addOtherOwner(node string, owner resource.Owner) {
	if slices.Contains(obs.OtherOwners[node], owner) {
		return
	}
	if obs.OtherOwners == nil {
		obs.OtherOwners = map[string][]resource.Owner{}
	}
	obs.OtherOwners[node] = append(obs.OtherOwners[node], owner)
}

// recorded returns, by node, the NodeHealthChecks whose status records a
// remediation resource of a kind whose cache cannot be read.
func (o *Observer) recorded(nhcs []*v1alpha1.NodeHealthCheck) map[string][]resource.Owner {
	readable := map[schema.GroupVersionKind]bool{}
	var owners map[string][]resource.Owner
	for _, nhc := range nhcs {
		owner := resource.Owner{Name: nhc.Name, UID: nhc.UID}
		eachRecorded(nhc, func(node string, rem *v1alpha1.Remediation) {
			gvk := rem.Resource.GroupVersionKind()
			ok, known := readable[gvk]
			if !known {
				ok = o.readable(gvk)
				readable[gvk] = ok
			}
			if ok || slices.Contains(owners[node], owner) {
				return
			}
			if owners == nil {
				owners = map[string][]resource.Owner{}
			}
			owners[node] = append(owners[node], owner)
		})
	}
	return owners
}

// eachRecorded calls visit with every remediation a NodeHealthCheck's
// status records, and its node.
func eachRecorded(nhc *v1alpha1.NodeHealthCheck, visit func(node string, rem *v1alpha1.Remediation)) {
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry == nil {
			continue
		}
		for _, rem := range entry.Remediations {
			if rem != nil {
				visit(entry.Name, rem)
			}
		}
	}
}

// readable tells whether a kind's resources can be known: its informer
// synced. One no longer served has no resources left: the mapper says so,
// or, before its next reset, the kind's list answered 404 (its resources
// went with its CRD, as kinds.Informers holds too).
func (o *Observer) readable(gvk schema.GroupVersionKind) bool {
	gvr, err := o.templates.resourceNow(gvk)
	if err != nil {
		return true
	}
	state := o.informers.State(gvr)
	return state.Synced || apierrors.IsNotFound(state.Err)
}
