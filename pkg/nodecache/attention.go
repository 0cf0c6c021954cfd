package nodecache

import "sync"

// attention is the set of NodeHealthChecks with a selected node that is not
// healthy, as their syncs tell the cache (Informer.ReadAtOnceFor). While it
// is not empty the cache reads every update as it arrives, without its batch
// window (--node-batch-window), so that a remediation is never created from
// a picture older than the watch's own delay: a node that recovers just
// before its deadline is seen recovered. While every node is healthy,
// nothing is due, and updates are read in batches.
type attention struct {
	mu   sync.Mutex
	nhcs map[string]bool
}

// set records whether a NodeHealthCheck has a node that is not healthy.
func (a *attention) set(nhc string, needed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !needed {
		delete(a.nhcs, nhc)
		return
	}
	if a.nhcs == nil {
		a.nhcs = map[string]bool{}
	}
	a.nhcs[nhc] = true
}

// any tells whether some NodeHealthCheck has a node that is not healthy.
func (a *attention) any() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.nhcs) > 0
}
