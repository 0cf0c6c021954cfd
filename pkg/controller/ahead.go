package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// answerWait bounds how long the NodeHealthCheck watch waits, for an event
// of an object whose status write is under way, for the write's answer:
// the API server sends the two at once, and the event is often the first
// to arrive. An event that waits longer is decoded.
const answerWait = 100 * time.Millisecond

// aheadOfCache shadows the informer with the newest NodeHealthCheck this
// controller wrote or read at the API server, until the informer shows it:
// a sync that runs before the watch delivers a status write (the next
// second's creates, in a storm) decides from the status written, not an
// older one, and bases its own write on that write's resourceVersion
// instead of failing with a conflict and waiting for a retry.
type aheadOfCache struct {
	byName sync.Map
	// writing holds, by name, the status write under way: a channel
	// closed once it ended, its answer remembered.
	writing sync.Map
}

// Writing notes a status write under way, until the function it returns
// is called, once the answer is remembered or the write failed.
func (w *aheadOfCache) Writing(name string) (ended func()) {
	done := make(chan struct{})
	w.writing.Store(name, done)
	return func() {
		w.writing.CompareAndDelete(name, done)
		close(done)
	}
}

// Remember keeps a NodeHealthCheck as the API server answered its write or
// read.
func (w *aheadOfCache) Remember(answered *v1alpha1.NodeHealthCheck) {
	w.byName.Store(answered.Name, answered)
}

// Answered returns the NodeHealthCheck remembered of that name and
// resourceVersion, or nil. While a status write of that name is under way,
// it waits for the write's answer, up to answerWait: the watch event of
// the write then takes the answered object instead of decoding its own,
// one decode of the status where there were two.
func (w *aheadOfCache) Answered(name, resourceVersion string) *v1alpha1.NodeHealthCheck {
	if answered := w.remembered(name, resourceVersion); answered != nil {
		return answered
	}
	value, writing := w.writing.Load(name)
	if !writing {
		return nil
	}
	timer := time.NewTimer(answerWait)
	defer timer.Stop()
	select {
	case <-value.(chan struct{}):
		return w.remembered(name, resourceVersion)
	case <-timer.C:
		return nil
	}
}

// remembered returns the NodeHealthCheck remembered of that name and
// resourceVersion, or nil.
func (w *aheadOfCache) remembered(name, resourceVersion string) *v1alpha1.NodeHealthCheck {
	if value, ok := w.byName.Load(name); ok {
		if answered := value.(*v1alpha1.NodeHealthCheck); answered.ResourceVersion == resourceVersion {
			return answered
		}
	}
	return nil
}

// Get returns the NodeHealthCheck remembered while the cached one is
// older, else the cached one, and forgets one the cache shows.
func (w *aheadOfCache) Get(cached *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	value, ok := w.byName.Load(cached.Name)
	if !ok {
		return cached
	}
	answered := value.(*v1alpha1.NodeHealthCheck)
	if answered.UID == cached.UID {
		if order, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, answered.ResourceVersion); err == nil && order < 0 {
			return answered
		}
	}
	w.byName.CompareAndDelete(cached.Name, value)
	return cached
}

func (w *aheadOfCache) Forget(name string) {
	w.byName.Delete(name)
}
