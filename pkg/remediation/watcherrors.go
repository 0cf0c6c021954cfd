package remediation

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// watchErrors remembers an informer's last list or watch error, such as a
// Forbidden for missing RBAC, so that what cannot be read is reported
// instead of waited for.
type watchErrors struct {
	mu   sync.Mutex
	last error
}

// record makes the informer report its list and watch errors here, and to
// failed when it is not nil, and still log them as client-go does. Call it
// before the informer starts.
func (w *watchErrors) record(informer cache.SharedIndexInformer, failed func(error)) {
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

// unsynced returns the last error while the informer has not synced: once
// it has, an old error no longer stands in the way.
func (w *watchErrors) unsynced(informer cache.SharedIndexInformer) error {
	if informer.HasSynced() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
