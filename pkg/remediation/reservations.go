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
// the resource is seen gone, the create certainly failed, its
// NodeHealthCheck is forgotten, or it lapses. It lapses as a create's
// expectation does: by then the informers show the resource, whose
// control-plane index counts it, or nothing was created (an uncertain
// create whose follow-up GET failed too), and holding every other
// control-plane node back until a restart would be the leak.
type controlPlaneReservations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// byResource maps a reserved resource (its creation key) to its holder.
	byResource map[string]reservation
}

type reservation struct {
	nhc, node string
	lapses    time.Time
}

// reservationTTL is how long a reservation holds at most.
const reservationTTL = ExpectationsTTL

func newControlPlaneReservations(clk clock.PassiveClock) *controlPlaneReservations {
	return &controlPlaneReservations{clock: clk, byResource: map[string]reservation{}}
}

// reserve takes a reservation for a control-plane node's resource, unless
// another control-plane node holds one.
func (r *controlPlaneReservations) reserve(nhc, node, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	for heldKey, held := range r.byResource {
		switch {
		case !now.Before(held.lapses):
			delete(r.byResource, heldKey)
		case held.node != node:
			return false
		}
	}
	r.byResource[key] = reservation{nhc: nhc, node: node, lapses: now.Add(reservationTTL)}
	return true
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
	now := r.clock.Now()
	var nodes []string
	for _, held := range r.byResource {
		if now.Before(held.lapses) && !slices.Contains(nodes, held.node) {
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
