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

func CreateKey(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) Key {
	return Key{nhc: nhc, resource: gvr, namespace: namespace, node: node, template: template}
}

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
func (f *Ledger) Book(key Key, name string, first, controlPlane bool, otherOwner func() string) error {
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
	f.add(key, write{node: key.node, name: name, controlPlane: controlPlane})
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

// retryLater is a write looked up after the next interval of its retries.
// A create whose fate the API server did not tell (a 5xx, a timeout, a
// lost connection), or whose look-up it did not answer, is looked up again
// on the back-off of a create that failed (health.FirstCreateRetry,
// doubling up to health.MaxCreateRetry) rather than TTL on: until it is
// known, its node waits, and so does every other node of a NodeHealthCheck
// whose status records no remediation yet, so that an outage's end
// releases them within MaxCreateRetry.
func (w write) retryLater(now time.Time) write {
	w.retry = min(max(2*w.retry, health.FirstCreateRetry), health.MaxCreateRetry)
	w.lapses = now.Add(w.retry)
	return w
}

// ExpectDelete records a delete about to be sent.
func (f *Ledger) ExpectDelete(nhc, node string, uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(DeleteKey(nhc, uid), write{node: node})
}

// Cancel withdraws a write that certainly did not happen, or whose result
// the cache shows already (a delete); a create's slot with it.
func (f *Ledger) Cancel(key Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.writes, key)
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

// NextLapse is when the first write the informers have not shown lapses,
// of any NodeHealthCheck, or zero: a create under way holds its node, and a
// control-plane node's create the cluster's slot, against every
// NodeHealthCheck until it is looked up (Lapsed), and nothing else wakes
// them then.
func (f *Ledger) NextLapse() time.Time {
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

// Resynced lapses the creates of a kind whose informer synced again that
// hold the control-plane slot alone, shown: a resource deleted while its
// kind could not be read (forbidden, a remediator deleting it meanwhile) is
// seen gone by no event, and would hold the slot until its next look-up,
// up to TTL on. The next sync looks them up (Lapsed).
func (f *Ledger) Resynced(gvr schema.GroupVersionResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	for key, w := range f.writes {
		if key.creation() && key.resource == gvr && w.shown && w.controlPlane && now.Before(w.lapses) {
			w.lapses = now
			f.writes[key] = w
		}
	}
}

// Lapsed is a create held for TTL, pending or holding the slot, to be
// looked up at the API server.
type Lapsed struct {
	NHC       string
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	Node      string
	// Shown: the informer showed the create; it holds the slot alone.
	Shown bool
	// ControlPlane: it holds the control-plane slot.
	ControlPlane bool

	key   Key
	write write
}

// Lapsed returns the creates of every NodeHealthCheck held for TTL, to be
// looked up, and drops the lapsed deletes. Each create is held for another
// TTL from now on: while its lookup is under way it still holds its node,
// or the slot, so that a sync of another NodeHealthCheck at the same
// instant does not find it gone. The informer may be behind (a watch that
// stops sending while its connection stays open shows nothing until it
// times out): its cache is not to be believed about them. Every
// NodeHealthCheck's, since a create under way holds its node against the
// others too, and its own NodeHealthCheck may not sync (disabled).
func (f *Ledger) Lapsed() []Lapsed {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	var lapsed []Lapsed
	for key, w := range f.writes {
		if now.Before(w.lapses) {
			continue
		}
		if !key.creation() {
			delete(f.writes, key)
			continue
		}
		w.lapses = now.Add(TTL)
		f.writes[key] = w
		lapsed = append(lapsed, Lapsed{NHC: key.nhc, Resource: key.resource, Namespace: key.namespace, Name: w.name, Node: w.node,
			Shown: w.shown, ControlPlane: w.controlPlane, key: key, write: w})
	}
	return lapsed
}

// KeepSlot ends a lapsed create's lookup that found it, shown or not: it
// holds the control-plane slot on, and its node no longer, unless the
// informers settled it meanwhile.
func (f *Ledger) KeepSlot(l Lapsed) {
	slot := l.write
	slot.shown = true
	f.endLookup(l, &slot)
}

// Drop ends a lapsed create's lookup that found it gone, unless the
// informers settled it meanwhile.
func (f *Ledger) Drop(l Lapsed) { f.endLookup(l, nil) }

// Retry ends a lapsed create's lookup that got no answer: it holds on as
// it did, and is looked up again after the next interval of its retries,
// unless the informers settled it meanwhile.
func (f *Ledger) Retry(l Lapsed) {
	again := l.write.retryLater(f.clock.Now())
	f.endLookup(l, &again)
}

// endLookup ends a lapsed create's lookup: it is held on as kept, or goes
// when kept is nil, unless the informers settled it meanwhile.
func (f *Ledger) endLookup(l Lapsed, kept *write) {
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
	defer f.mu.Unlock()
	for key := range f.writes {
		if key.creation() && key.resource == gvr {
			delete(f.writes, key)
		}
	}
}

// add records a write, which lapses after TTL; f.mu is held.
func (f *Ledger) add(key Key, w write) {
	w.lapses = f.clock.Now().Add(TTL)
	f.writes[key] = w
}
