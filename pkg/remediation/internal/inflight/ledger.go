// Package inflight is the one ledger of this process's writes of
// remediation resources under way, and the cluster's one control-plane
// slot: the Writer books its writes, the informers' changes settle them,
// and the Observer reads what is pending.
package inflight

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// TTL bounds how long a write the informers have not shown holds
// its node back, and how long a control-plane create holds the cluster's
// one control-plane slot, before its resource is looked up (Lapsed).
const TTL = time.Minute

// Ledger is the one ledger of this process's writes of remediation
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
// (Lapsed): dropping the reservation of a resource that a stalled
// watch never showed would let a second control-plane node start.
type Ledger struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// writes holds every write under way, by its key.
	writes map[Key]write
	// slotFreed hears that a create no resource shows gave the
	// control-plane slot up (OnSlotFreed).
	slotFreed func()
}

// Key names a write: a create by its NodeHealthCheck, resource,
// namespace, node and template (each names one resource); a delete by its
// NodeHealthCheck and the resource's UID.
type Key struct {
	nhc                       string
	resource                  schema.GroupVersionResource
	namespace, node, template string
	uid                       types.UID
}

// CreateKey is the key of a create: the resource a NodeHealthCheck creates
// for a node from a template.
func CreateKey(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) Key {
	return Key{nhc: nhc, resource: gvr, namespace: namespace, node: node, template: template}
}

// DeleteKey is the key of a delete: a NodeHealthCheck's resource, by UID.
func DeleteKey(nhc string, uid types.UID) Key { return Key{nhc: nhc, uid: uid} }

// sameResource tells whether two create keys name one resource, whoever
// Created it.
func (k Key) sameResource(other Key) bool {
	k.nhc = other.nhc
	return k == other
}

func (k Key) creation() bool { return k.uid == "" }

type write struct {
	node string
	// owner is the UID of the NodeHealthCheck that booked a create: one
	// recreated under its name is held on the create's node (Pending), but
	// its own writes are not the old one's (OwnWritePending).
	owner types.UID
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
	// retry is the interval of the look-ups of a create whose fate is not
	// known; zero while none was needed.
	retry time.Duration
}

// New returns an empty ledger on a clock.
func New(clock clock.PassiveClock) *Ledger {
	return &Ledger{clock: clock, writes: map[Key]write{}}
}

// Book records a create about to be sent, unless it must wait, in one
// step under the ledger's lock, so that two syncs (of one NodeHealthCheck
// or of two) cannot both book what only one may have:
//
//   - A node's first remediation waits while another NodeHealthCheck has a
//     create for the node under way, or a resource for it (otherOwner: the
//     caches, asked after the ledger, so that a create that settles
//     meanwhile shows in one of the two).
//   - A control-plane node's create takes the cluster's one control-plane
//     slot, and waits while another control-plane node holds it.
func (f *Ledger) Book(key Key, owner types.UID, name string, first, controlPlane bool, otherOwner func() string) error {
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
	if controlPlane && health.AnotherControlPlaneNode(f.controlPlaneSlot(), key.node) {
		return &controlPlaneBusyError{node: key.node}
	}
	f.add(key, write{node: key.node, owner: owner, name: name, controlPlane: controlPlane})
	return nil
}

// Created records the UID of the resource a create made.
func (f *Ledger) Created(key Key, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.writes[key]; ok {
		w.uid = uid
		f.writes[key] = w
	}
}

// Unanswered records a create the API server answered with an error of
// unknown fate: its resource may exist, and is looked up soon (Lapsed).
func (f *Ledger) Unanswered(key Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.writes[key]; ok {
		f.writes[key] = w.retryLater(f.clock.Now())
	}
}

// ExpectDelete records a delete about to be sent.
func (f *Ledger) ExpectDelete(nhc, node string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(DeleteKey(nhc, uid), write{node: node})
}

// OnSlotFreed sets who hears that a create gave the control-plane slot up
// with no resource to show it: it failed, was refused, was looked up gone,
// or its kind is no longer served. A sync that saw the slot held while the
// create was in flight waits for no resource event; this wakes it. Set it
// before the ledger is used.
func (f *Ledger) OnSlotFreed(fn func()) { f.slotFreed = fn }

// freed tells of a slot given up, outside f.mu.
func (f *Ledger) freed(slot bool) {
	if slot && f.slotFreed != nil {
		f.slotFreed()
	}
}

// Cancel withdraws a write that certainly did not happen, or whose result
// the cache shows already (a delete); a create's slot with it.
func (f *Ledger) Cancel(key Key) {
	f.mu.Lock()
	w, ok := f.writes[key]
	delete(f.writes, key)
	f.mu.Unlock()
	f.freed(ok && w.controlPlane)
}

// Settle settles the writes an informer's change shows: a resource that
// exists shows its create, a deleted one, or one with a deletion
// timestamp, its delete; a deleted control-plane remediation frees the
// slot its create holds. Once a create's UID is known, only that resource
// settles it: the slot is not freed by the late deletion of an earlier
// resource of the same name, which a stalled watch may deliver after the
// next create, and which would otherwise let a second control-plane node
// start. It returns the NodeHealthChecks whose create it confirms.
func (f *Ledger) Settle(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) (confirmed []string) {
	template := obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
	target := CreateKey("", gvr, obj.GetNamespace(), resource.TargetNode(obj), template)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, nhc := range resource.OwnerNames(obj) {
		key := CreateKey(nhc, gvr, obj.GetNamespace(), resource.TargetNode(obj), template)
		if w, ok := f.writes[key]; ok && !deleted && !w.shown && w.is(obj.GetUID()) {
			confirmed = append(confirmed, nhc)
			w.shown = true
			f.settled(key, w)
		}
		if deleted || obj.GetDeletionTimestamp() != nil {
			delete(f.writes, DeleteKey(nhc, obj.GetUID()))
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
func (f *Ledger) settled(key Key, w write) {
	if w.shown && !w.controlPlane {
		delete(f.writes, key)
		return
	}
	f.writes[key] = w
}

// Pending returns the nodes of a NodeHealthCheck with a write that
// was neither shown nor has lapsed. A lapsed create waits for its lookup
// (Lapsed); a lapsed delete holds nothing.
func (f *Ledger) Pending(nhc string) map[string]bool {
	now := f.clock.Now()
	return f.unshownNodes(nhc, func(_ Key, w write) bool { return now.Before(w.lapses) })
}

// OwnWritePending tells whether a NodeHealthCheck has a write that was
// neither shown nor has lapsed, of its own (owner) and not of an earlier
// one of its name: a create of that one is owned by another UID, and
// neither its status nor the remediation guard will show it.
func (f *Ledger) OwnWritePending(nhc string, owner types.UID) bool {
	now := f.clock.Now()
	return len(f.unshownNodes(nhc, func(_ Key, w write) bool {
		return now.Before(w.lapses) && (w.owner == "" || w.owner == owner)
	})) > 0
}

// Creating are the nodes of a NodeHealthCheck's creates that the
// informers have not shown, lapsed or not: until one is shown or certainly
// failed, its resource may exist.
func (f *Ledger) Creating(nhc string) map[string]bool {
	return f.unshownNodes(nhc, func(key Key, _ write) bool { return key.creation() })
}

// unshownNodes are the nodes of a NodeHealthCheck's writes that the
// informers have not shown and that keep accepts; nil for none.
func (f *Ledger) unshownNodes(nhc string, keep func(Key, write) bool) map[string]bool {
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

// PendingResources lists the kinds of a NodeHealthCheck's pending creates:
// they stay watched until their informer shows the create, whatever the
// spec and status say meanwhile.
func (f *Ledger) PendingResources(nhc string) []schema.GroupVersionResource {
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

// Forget drops the deletes of a deleted NodeHealthCheck, whose informers
// may stop before they show its resources go. Its creates stay until shown
// and seen gone, or looked up gone once they lapse: the garbage collector
// deletes the resource, but a remediator's finalizer keeps it while it
// works, and it holds its node meanwhile: if a stalled watch has not shown
// the create, a NodeHealthCheck recreated under the same name would
// otherwise start a second remediation beside it.
func (f *Ledger) Forget(nhc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.writes {
		if key.nhc == nhc && !key.creation() {
			delete(f.writes, key)
		}
	}
}

// ForgetKind drops the creates of a kind the API no longer serves, and
// the control-plane slot with them: its resources went with its CRD, and
// no look-up of them would answer anything else.
func (f *Ledger) ForgetKind(gvr schema.GroupVersionResource) {
	f.mu.Lock()
	slot := false
	for key, w := range f.writes {
		if key.creation() && key.resource == gvr {
			slot = slot || w.controlPlane
			delete(f.writes, key)
		}
	}
	f.mu.Unlock()
	f.freed(slot)
}

// add records a write, which lapses after TTL; f.mu is held.
func (f *Ledger) add(key Key, w write) {
	w.lapses = f.clock.Now().Add(TTL)
	f.writes[key] = w
}
