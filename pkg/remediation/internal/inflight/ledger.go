package remediation

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// inFlightTTL bounds how long a write the informers have not shown holds
// its node back, and how long a control-plane create holds the cluster's
// one control-plane slot, before its resource is looked up (LookUpLapsed).
const inFlightTTL = time.Minute

// inFlight is the one ledger of this process's writes of remediation
// resources under way, as the ReplicaSet controller keeps its expectations:
//
//   - A write the informers have not shown yet is pending: its node gets no
//     new action (the cache is not what the API server has, and acting on
//     it could create a resource twice); the NodeHealthCheck's other nodes
//     go on. After a restart nothing is pending, because the informers have
//     synced before the first sync.
//   - A control-plane node's create also holds the cluster's one
//     control-plane slot, across every NodeHealthCheck and worker: a sync's
//     busy set comes from caches, which show a create only after it
//     happened, so two syncs could each start one. It holds until the
//     resource is seen gone, or the create certainly failed, even after its
//     NodeHealthCheck is deleted; shown by the informers, it stays only as
//     the slot (their control-plane index counts it too).
//
// A create that lapses unshown is looked up at the API server, not dropped
// (LookUpLapsed): dropping the reservation of a resource that a stalled
// watch never showed would let a second control-plane node start.
type inFlight struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// writes holds every write under way, by its key.
	writes map[writeKey]write
}

// writeKey names a write: a create by its NodeHealthCheck, resource,
// namespace, node and template (each names one resource); a delete by its
// NodeHealthCheck and the resource's UID.
type writeKey struct {
	nhc                       string
	resource                  schema.GroupVersionResource
	namespace, node, template string
	uid                       types.UID
}

func createKey(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) writeKey {
	return writeKey{nhc: nhc, resource: gvr, namespace: namespace, node: node, template: template}
}

func deleteKey(nhc string, uid types.UID) writeKey { return writeKey{nhc: nhc, uid: uid} }

// sameResource tells whether two create keys name one resource, whoever
// created it.
func (k writeKey) sameResource(other writeKey) bool {
	k.nhc = other.nhc
	return k == other
}

func (k writeKey) creation() bool { return k.uid == "" }

type write struct {
	node string
	// name is a create's resource name, to look it up once it lapsed.
	name string
	// uid is the created resource's, once the create answered: an event of
	// an earlier resource of the same name (deleted, and its deletion
	// delivered late by a stalled watch) settles nothing of this create.
	uid types.UID
	// controlPlane: a create that holds the control-plane slot.
	controlPlane bool
	// shown: the informer showed the create; it is no longer pending, and
	// stays only for the slot.
	shown  bool
	lapses time.Time
}

func newInFlight(clock clock.PassiveClock) *inFlight {
	return &inFlight{clock: clock, writes: map[writeKey]write{}}
}

// book records a create about to be sent, unless it must wait, in one
// step under the ledger's lock, so that two syncs (of one NodeHealthCheck
// or of two) cannot both book what only one may have:
//
//   - A node's first remediation waits while another NodeHealthCheck has a
//     create for the node under way, or a resource for it (otherOwner: the
//     caches, asked after the ledger, so that a create that settles
//     meanwhile shows in one of the two).
//   - A control-plane node's create takes the cluster's one control-plane
//     slot, and waits while another control-plane node holds it.
func (f *inFlight) book(key writeKey, name string, first, controlPlane bool, otherOwner func() string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if first {
		now := f.clock.Now()
		for other, w := range f.writes {
			if other.nhc != key.nhc && other.creation() && w.node == key.node && !w.shown && now.Before(w.lapses) {
				return &remediatedByOtherError{node: key.node, other: other.nhc}
			}
		}
		if other := otherOwner(); other != "" {
			return &remediatedByOtherError{node: key.node, other: other}
		}
	}
	if controlPlane && f.slotHeldByOther(key.node) {
		return &controlPlaneBusyError{node: key.node}
	}
	f.add(key, write{node: key.node, name: name, controlPlane: controlPlane})
	return nil
}

// created records the UID of the resource a create made.
func (f *inFlight) created(key writeKey, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.writes[key]; ok {
		w.uid = uid
		f.writes[key] = w
	}
}

// expectDelete records a delete about to be sent.
func (f *inFlight) expectDelete(nhc, node string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(deleteKey(nhc, uid), write{node: node})
}

// cancel withdraws a write that certainly did not happen, or whose result
// the cache shows already (a delete); a create's slot with it.
func (f *inFlight) cancel(key writeKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.writes, key)
}

// settle settles the writes an informer's change shows: a resource that
// exists shows its create, a deleted one, or one with a deletion
// timestamp, its delete; a deleted control-plane remediation frees the
// slot its create holds. Once a create's UID is known, only that resource
// settles it: the slot is not freed by the late deletion of an earlier
// resource of the same name, which a stalled watch may deliver after the
// next create, and which would otherwise let a second control-plane node
// start. It returns the NodeHealthChecks whose create it confirms.
func (f *inFlight) settle(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) (confirmed []string) {
	template := obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
	target := createKey("", gvr, obj.GetNamespace(), resource.TargetNode(obj), template)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, nhc := range resource.OwnerNames(obj) {
		key := createKey(nhc, gvr, obj.GetNamespace(), resource.TargetNode(obj), template)
		if w, ok := f.writes[key]; ok && !deleted && !w.shown && w.is(obj.GetUID()) {
			confirmed = append(confirmed, nhc)
			w.shown = true
			f.settled(key, w)
		}
		if deleted || obj.GetDeletionTimestamp() != nil {
			delete(f.writes, deleteKey(nhc, obj.GetUID()))
		}
	}
	if deleted && resource.ForControlPlaneNode(obj) {
		for key, w := range f.writes {
			if w.controlPlane && key.sameResource(target) && w.uid == obj.GetUID() {
				w.controlPlane = false
				f.settled(key, w)
			}
		}
	}
	return confirmed
}

// is tells whether a create may have made the resource of that UID: it
// did, or its answer has not come.
func (w write) is(uid types.UID) bool { return w.uid == "" || w.uid == uid }

// settled keeps a create while it is pending or holds the slot; f.mu is
// held.
func (f *inFlight) settled(key writeKey, w write) {
	if w.shown && !w.controlPlane {
		delete(f.writes, key)
		return
	}
	f.writes[key] = w
}

// pendingNodes returns the nodes of a NodeHealthCheck with a write that
// was neither shown nor has lapsed. A lapsed create waits for its lookup
// (lapsed); a lapsed delete holds nothing.
func (f *inFlight) pendingNodes(nhc string) map[string]bool {
	now := f.clock.Now()
	return f.unshownNodes(nhc, func(_ writeKey, w write) bool { return now.Before(w.lapses) })
}

// creatingNodes are the nodes of a NodeHealthCheck's creates that the
// informers have not shown, lapsed or not: until one is shown or certainly
// failed, its resource may exist.
func (f *inFlight) creatingNodes(nhc string) map[string]bool {
	return f.unshownNodes(nhc, func(key writeKey, _ write) bool { return key.creation() })
}

// unshownNodes are the nodes of a NodeHealthCheck's writes that the
// informers have not shown and that keep accepts; nil for none.
func (f *inFlight) unshownNodes(nhc string, keep func(writeKey, write) bool) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var nodes map[string]bool
	for key, w := range f.writes {
		if key.nhc != nhc || w.shown || !keep(key, w) {
			continue
		}
		if nodes == nil {
			nodes = map[string]bool{}
		}
		nodes[w.node] = true
	}
	return nodes
}

// pendingResources lists the kinds of a NodeHealthCheck's pending creates:
// they stay watched until their informer shows the create, whatever the
// spec and status say meanwhile.
func (f *inFlight) pendingResources(nhc string) []schema.GroupVersionResource {
	f.mu.Lock()
	defer f.mu.Unlock()
	var resources []schema.GroupVersionResource
	for key, w := range f.writes {
		if key.nhc == nhc && key.creation() && !w.shown && !slices.Contains(resources, key.resource) {
			resources = append(resources, key.resource)
		}
	}
	return resources
}

// nextLapse is when the first write the informers have not shown lapses,
// of any NodeHealthCheck, or zero: a create under way holds its node, and a
// control-plane node's create the cluster's slot, against every
// NodeHealthCheck until it is looked up (lapsed), and nothing else wakes
// them then.
func (f *inFlight) nextLapse() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next time.Time
	for _, w := range f.writes {
		if !w.shown && (next.IsZero() || w.lapses.Before(next)) {
			next = w.lapses
		}
	}
	return next
}

// lapsedCreate is a create held for inFlightTTL: pending, or holding the
// slot.
type lapsedCreate struct {
	key writeKey
	write
}

// lapsed returns the creates of every NodeHealthCheck held for
// inFlightTTL, to be looked up (LookUpLapsed), and drops the lapsed
// deletes. Each create is held for another inFlightTTL from now on: while
// its lookup is under way it still holds its node, or the slot, so that a
// sync of another NodeHealthCheck at the same instant does not find it
// gone. The informer may be behind (a watch that stops sending while its
// connection stays open shows nothing until it times out): its cache is not
// to be believed about them. Every NodeHealthCheck's, since a create under
// way holds its node against the others too, and its own NodeHealthCheck
// may not sync (disabled).
func (f *inFlight) lapsed() []lapsedCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	var lapsed []lapsedCreate
	for key, w := range f.writes {
		if now.Before(w.lapses) {
			continue
		}
		if !key.creation() {
			delete(f.writes, key)
			continue
		}
		w.lapses = now.Add(inFlightTTL)
		f.writes[key] = w
		lapsed = append(lapsed, lapsedCreate{key: key, write: w})
	}
	return lapsed
}

// lookedUp ends a lapsed create's lookup: it is held on as kept, or goes
// when kept is nil, unless the informers settled it meanwhile.
func (f *inFlight) lookedUp(l lapsedCreate, kept *write) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if current, ok := f.writes[l.key]; !ok || current != l.write {
		return
	}
	if kept == nil {
		delete(f.writes, l.key)
		return
	}
	f.writes[l.key] = *kept
}

// forget drops the deletes of a deleted NodeHealthCheck, whose informers
// may stop before they show its resources go. Its creates stay until shown
// and seen gone, or looked up gone once they lapse: the garbage collector
// deletes the resource, but a remediator's finalizer keeps it while it
// works, and it holds its node meanwhile: if a stalled watch has not shown
// the create, a NodeHealthCheck recreated under the same name would
// otherwise start a second remediation beside it.
func (f *inFlight) forget(nhc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.writes {
		if key.nhc == nhc && !key.creation() {
			delete(f.writes, key)
		}
	}
}

// forgetKind drops the creates of a kind the API no longer serves, and
// the control-plane slot with them: its resources went with its CRD, and
// no look-up of them would answer anything else.
func (f *inFlight) forgetKind(gvr schema.GroupVersionResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.writes {
		if key.creation() && key.resource == gvr {
			delete(f.writes, key)
		}
	}
}

// add records a write, which lapses after inFlightTTL; f.mu is held.
func (f *inFlight) add(key writeKey, w write) {
	w.lapses = f.clock.Now().Add(inFlightTTL)
	f.writes[key] = w
}
