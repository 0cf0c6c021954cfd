package remediation

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// One control-plane node at a time, across every NodeHealthCheck and
// worker: what pkg/health's controlplane.go decides from, and the slot
// that keeps two syncs from starting two control-plane nodes at once.
//
// The busy set (Observation.BusyControlPlaneNodes) holds the control-plane
// nodes with a remediation resource of any kind any NodeHealthCheck uses,
// whoever owns it (quorum does not care who remediates); those whose create
// holds the slot; what a kind stopped for a lasting error last showed; and
// the nodes other NodeHealthChecks' statuses record a resource of, of a
// kind that cannot be read now, when they are control-plane nodes or gone.
// It is known once every NodeHealthCheck's kinds are watched, and synced or
// stopped for a lasting error (kinds.Informers.UnknownRemediations).
//
// The slot: a sync's busy set comes from caches, which show a create only
// after it happened, so two syncs could each start one. A control-plane
// create books the slot in the ledger before it is sent (inFlight.book),
// and holds it until its resource is seen gone or the create certainly
// failed; a lapsed one is looked up, not dropped (lapsed.go).

// Why control-plane remediations cannot all be known, and so no
// control-plane remediation starts.
const (
	messageKindsNotWatchedYet = "the remediation kinds of every NodeHealthCheck are not watched yet"
	messageKindsUnknown       = "the remediation resources %s cannot be read, and may hold a control-plane remediation"
)

// readControlPlane reads the control-plane nodes under remediation: quorum
// does not care who remediates, so every kind any NodeHealthCheck uses
// counts, whoever owns the resource, and so do the creates under way and
// what a kind stopped for a lasting error last showed. They are known once
// every NodeHealthCheck's kinds are watched, and synced or stopped for a
// lasting error (kinds.Informers.UnknownRemediations).
func (o *Observer) readControlPlane(obs *Observation, reserved []string) {
	for _, node := range o.informers.ControlPlaneNodes() {
		obs.BusyControlPlaneNodes[node] = true
	}
	for _, node := range reserved {
		obs.BusyControlPlaneNodes[node] = true
	}
	switch unknown := o.informers.UnknownRemediations(); {
	case !o.everyKindWatched.Load():
		obs.ControlPlaneUnknown = messageKindsNotWatchedYet
	case len(unknown) > 0:
		obs.ControlPlaneUnknown = fmt.Sprintf(messageKindsUnknown, kindList(unknown))
	}
}

// mayBeControlPlane tells whether a node is a control-plane node, or may
// have been: it is gone.
func (o *Observer) mayBeControlPlane(node string) bool {
	n, err := o.nodes.Get(node)
	return apierrors.IsNotFound(err) || err == nil && v1alpha1.IsControlPlane(n.Labels)
}

// controlPlaneNodes lists the nodes whose creates hold the control-plane
// slot.
func (f *inFlight) controlPlaneNodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var nodes []string
	for _, w := range f.writes {
		if w.controlPlane && !slices.Contains(nodes, w.node) {
			nodes = append(nodes, w.node)
		}
	}
	return nodes
}

// slotHeldByOther tells whether a create of another node holds the slot;
// f.mu is held.
func (f *inFlight) slotHeldByOther(node string) bool {
	for _, w := range f.writes {
		if w.controlPlane && w.node != node {
			return true
		}
	}
	return false
}

// controlPlaneBusyError reports a control-plane remediation that waits,
// because another control-plane node's remediation was started meanwhile.
type controlPlaneBusyError struct {
	node string
}

func (e *controlPlaneBusyError) Error() string {
	return fmt.Sprintf("another control-plane node's remediation has just started; %s waits, to protect etcd quorum", e.node)
}
