package kinds

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// What is known of each kind's informer: whether its cache can be read,
// and which kinds count as unknown.

// State says whether a kind's cache can be read.
func (v View) State(gvr schema.GroupVersionResource) State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.state(gvr)
}

// state is State with mu held.
func (v View) state(gvr schema.GroupVersionResource) State {
	if s, ok := v.stopped[gvr]; ok {
		return State{Err: s.err, RetryAt: s.retryAt}
	}
	r, ok := v.running[gvr]
	if !ok {
		return State{}
	}
	if r.informer.HasSynced() {
		return State{Synced: true}
	}
	if r.retried != nil {
		return State{Err: r.retried}
	}
	if v.clock.Since(r.started) < v.grace {
		return State{}
	}
	return State{Err: r.errors.Unsynced(r.informer)}
}

// UnknownRemediations lists the kinds some NodeHealthCheck uses for
// remediation resources whose cache cannot be read yet: starting (within the
// grace), or failing for a passing reason. A kind stopped for a lasting one
// (forbidden, no longer served: failed, Forbidden, stopFailing), and its
// retries until one syncs, is not unknown: one broken remediator would
// otherwise hold every control-plane node of the cluster for as long as it
// stays broken. The nodes its cache showed stay busy instead (shown); its
// own NodeHealthChecks stay disabled (State). A kind looked at for
// remediations that outlived their NodeHealthCheck (Look) is unknown until
// it synced.
func (v View) UnknownRemediations() []schema.GroupVersionResource {
	v.mu.Lock()
	defer v.mu.Unlock()
	var unknown []schema.GroupVersionResource
	for gvr, r := range v.running {
		if r.looking {
			unknown = append(unknown, gvr)
		}
	}
	for _, u := range v.uses {
		for gvr := range u.remediations {
			if !v.state(gvr).Synced && !v.failedLastingly(gvr) && !slices.Contains(unknown, gvr) {
				unknown = append(unknown, gvr)
			}
		}
	}
	return unknown
}

// failedLastingly tells whether a kind's informer was stopped for a lasting
// error, and is stopped or being retried; mu is held.
func (v View) failedLastingly(gvr schema.GroupVersionResource) bool {
	if _, ok := v.stopped[gvr]; ok {
		return true
	}
	r, ok := v.running[gvr]
	return ok && r.retried != nil
}

// AllRead tells whether every kind that may hold remediation resources is
// read: each such informer, started for a NodeHealthCheck's resources or to
// look for leftovers, has synced, and none is stopped for an error. A kind
// used for templates alone is not one.
func (v View) AllRead() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range v.running {
		if !r.metadataOnly && !r.informer.HasSynced() {
			return false
		}
	}
	for gvr := range v.stopped {
		if !v.templatesOnly(gvr) {
			return false
		}
	}
	return len(v.unread) == 0
}

// RetryUnread starts again, RetryInterval after it failed, the informer of
// each kind that could never be read and that nothing watches meanwhile: a
// kind looked at for leftovers while it was forbidden is not used by any
// NodeHealthCheck, and would otherwise stay unread for good. A retry that
// fails as the try before it did concerns the kind's users alone, none for
// such a kind (recordFailing): it wakes no NodeHealthCheck.
func (inf *Informers) RetryUnread() {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	now := inf.clock.Now()
	for gvr, failed := range inf.unread {
		_, running := inf.running[gvr]
		_, stopped := inf.stopped[gvr]
		if !running && !stopped && !now.Before(failed.retryAt) {
			inf.running[gvr] = inf.start(gvr, stoppedInformer{err: failed.err})
		}
	}
}

// Running lists the resources with a running informer.
func (v View) Running() []schema.GroupVersionResource {
	v.mu.Lock()
	defer v.mu.Unlock()
	return sets.KeySet(v.running).UnsortedList()
}

// Synced tells whether the informers of all these resources have synced.
func (v View) Synced(resources ...schema.GroupVersionResource) bool {
	for _, gvr := range resources {
		if r := v.informer(gvr); r == nil || !r.informer.HasSynced() {
			return false
		}
	}
	return true
}
