package inflight

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The ledger's look-ups: a create held for TTL unshown, or whose fate the
// API server did not tell, is looked up at the API server (Lapsed) and
// kept, dropped or retried on what the look-up found.

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
	current, ok := f.writes[l.key]
	switch {
	case !ok || current != l.write:
		kept = &current
	case kept == nil:
		delete(f.writes, l.key)
	default:
		f.writes[l.key] = *kept
	}
	f.mu.Unlock()
	f.freed(kept == nil && l.write.controlPlane)
}
