package remediation

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// controlPlaneReservations keep control-plane remediations one at a time
// across every NodeHealthCheck and worker of this process. A sync's busy set
// comes from caches, which show a create only after it happened, so two
// syncs could each start one; a reservation closes that gap. It is taken
// before a control-plane remediation's create is sent, and it holds until
// the resource is seen gone, the create certainly failed, or its
// NodeHealthCheck is forgotten. After reservationTTL, the next read looks
// the resource up (lookUpLapsed): shown by the informers, whose
// control-plane index counts it from then on, or gone at the API server,
// the reservation ends; otherwise (a watch that stopped sending, an
// uncertain create whose follow-up GET failed too, an outage) it holds on,
// for quorum: seed 104171 of make sim started a second control-plane node
// when the reservation of a resource its stalled watch never showed lapsed.
type controlPlaneReservations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// byResource maps a reserved resource (its creation key) to its holder.
	byResource map[string]reservation
}

type reservation struct {
	nhc, node string
	// resource, namespace and name name the resource reserved for, to look
	// it up once the reservation lapsed.
	resource        schema.GroupVersionResource
	namespace, name string
	lapses          time.Time
}

// reservationTTL is how long a reservation holds before the resource is
// looked up.
const reservationTTL = ExpectationsTTL

func newControlPlaneReservations(clk clock.PassiveClock) *controlPlaneReservations {
	return &controlPlaneReservations{clock: clk, byResource: map[string]reservation{}}
}

// reserve takes a reservation for a control-plane node's resource, unless
// another control-plane node holds one.
func (r *controlPlaneReservations) reserve(nhc, node, key string, gvr schema.GroupVersionResource, namespace, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, held := range r.byResource {
		if held.node != node {
			return false
		}
	}
	r.byResource[key] = reservation{nhc: nhc, node: node, resource: gvr, namespace: namespace, name: name, lapses: r.clock.Now().Add(reservationTTL)}
	return true
}

// lapsedReservation is a reservation held for reservationTTL.
type lapsedReservation struct {
	key string
	reservation
}

// lapsed removes and returns the reservations held for reservationTTL, to
// be looked up and renewed if their resource may still be unseen.
func (r *controlPlaneReservations) lapsed() []lapsedReservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var lapsed []lapsedReservation
	for key, held := range r.byResource {
		if !now.Before(held.lapses) {
			lapsed = append(lapsed, lapsedReservation{key: key, reservation: held})
			delete(r.byResource, key)
		}
	}
	return lapsed
}

// renew takes a lapsed reservation again for reservationTTL.
func (r *controlPlaneReservations) renew(l lapsedReservation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.lapses = r.clock.Now().Add(reservationTTL)
	r.byResource[l.key] = l.reservation
}

// release drops the reservation of a resource.
func (r *controlPlaneReservations) release(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byResource, key)
}

// forget drops the reservations of a deleted NodeHealthCheck, whose
// informers may stop before they see its resources go.
func (r *controlPlaneReservations) forget(nhc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, held := range r.byResource {
		if held.nhc == nhc {
			delete(r.byResource, key)
		}
	}
}

// nodes lists the reserved control-plane nodes.
func (r *controlPlaneReservations) nodes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var nodes []string
	for _, held := range r.byResource {
		if !slices.Contains(nodes, held.node) {
			nodes = append(nodes, held.node)
		}
	}
	return nodes
}

// settle releases the reservation of a control-plane remediation seen gone.
// It is a ChangeFunc.
func (r *controlPlaneReservations) settle(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	if !deleted || !IsControlPlaneRemediation(obj) {
		return
	}
	r.release(creationKey(gvr, obj.GetNamespace(), NodeOf(obj), obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]))
}
