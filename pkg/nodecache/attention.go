package nodecache

import (
	"sync"
	"time"
)

// attention holds, for each NodeHealthCheck that tells the cache
// (Informer.ReadAtOnceFrom), the instant from which a create of a
// remediation may be due: a node's unhealthy condition reaches its
// duration, a step reaches its timeout, or a node waits for its remediation
// now. From then on the cache reads every update as it arrives, without its
// batch window (--node-batch-window), so that a create is decided from a
// picture no older than the watch's own delay: a node that recovers just
// before its deadline is seen recovered. Until then nothing can be created,
// and updates, a node's failure or recovery among them, are read in
// batches; and again once the creates due went out, until the next may be
// due.
type attention struct {
	mu   sync.Mutex
	from map[string]time.Time
}

// set records from when a NodeHealthCheck may create; zero: not at all.
func (a *attention) set(nhc string, from time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if from.IsZero() {
		delete(a.from, nhc)
		return
	}
	if a.from == nil {
		a.from = map[string]time.Time{}
	}
	a.from[nhc] = from
}

// dueBy tells whether some NodeHealthCheck may create by t.
func (a *attention) dueBy(t time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, from := range a.from {
		if !from.After(t) {
			return true
		}
	}
	return false
}
