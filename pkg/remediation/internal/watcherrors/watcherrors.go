// Package watcherrors remembers an informer's list and watch errors, for
// the remediation kinds' informers and the node leases' alike.
package watcherrors

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Errors remembers an informer's last list or watch error, such as a
// Forbidden for missing RBAC, so that what cannot be read is reported
// instead of waited for.
type Errors struct {
	mu   sync.Mutex
	last error
}

// Record makes the informer report its list and watch errors here, and to
// failed when it is not nil, and still log them as client-go does. Call it
// before the informer starts.
func (w *Errors) Record(informer cache.SharedIndexInformer, failed func(error)) {
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, reflector *cache.Reflector, err error) {
		w.mu.Lock()
		w.last = err
		w.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, reflector, err)
		if failed != nil {
			failed(err)
		}
	})
}

// Unsynced returns the last error while the informer has not synced: once
// it has, an old error no longer stands in the way.
func (w *Errors) Unsynced(informer cache.SharedIndexInformer) error {
	if informer.HasSynced() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
