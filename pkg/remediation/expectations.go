package remediation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// ExpectationsTTL bounds how long an unobserved write holds a NodeHealthCheck
// back, should its informer event never come.
const ExpectationsTTL = time.Minute

// Expectations remembers this controller's creates and deletes of remediation
// resources until the informers show them, per NodeHealthCheck. A sync of a
// NodeHealthCheck with unobserved writes would decide from a cache that has
// not caught up, and could create a resource twice: with generated names, a
// second create does not even fail. After a restart there is nothing to
// expect, because the informers have synced before the first sync.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// pending maps a NodeHealthCheck's name to its unobserved writes and
	// when each expectation lapses.
	pending map[string]map[string]time.Time
}

// NewExpectations returns empty expectations.
func NewExpectations(clock clock.PassiveClock) *Expectations {
	return &Expectations{clock: clock, pending: map[string]map[string]time.Time{}}
}

func creationKey(gvr schema.GroupVersionResource, namespace, node, template string) string {
	return "create " + gvr.String() + " " + namespace + " " + node + " " + template
}

func deletionKey(uid types.UID) string { return "delete " + string(uid) }

// expectCreation records a create about to be sent.
func (e *Expectations) expectCreation(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) {
	e.expect(nhc, creationKey(gvr, namespace, node, template))
}

// forgetCreation withdraws a creation that certainly did not happen, or
// whose result the cache shows already.
func (e *Expectations) forgetCreation(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) {
	e.observe(nhc, creationKey(gvr, namespace, node, template))
}

// expectDeletion records a delete about to be sent.
func (e *Expectations) expectDeletion(nhc string, uid types.UID) {
	e.expect(nhc, deletionKey(uid))
}

// forgetDeletion withdraws a deletion that certainly did not happen, or
// whose result the cache shows already.
func (e *Expectations) forgetDeletion(nhc string, uid types.UID) {
	e.observe(nhc, deletionKey(uid))
}

// settle settles the expectations an informer's change satisfies: a resource
// that exists settles its creation, a deleted one, or one with a deletion
// timestamp, its deletion. It is a ChangeFunc.
func (e *Expectations) settle(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	template := obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
	for _, nhc := range OwnerNames(obj) {
		if !deleted {
			e.observe(nhc, creationKey(gvr, obj.GetNamespace(), NodeOf(obj), template))
		}
		if deleted || obj.GetDeletionTimestamp() != nil {
			e.observe(nhc, deletionKey(obj.GetUID()))
		}
	}
}

// satisfied tells whether every write for a NodeHealthCheck was observed or
// has lapsed.
func (e *Expectations) satisfied(nhc string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	for key, lapses := range e.pending[nhc] {
		if !now.Before(lapses) {
			delete(e.pending[nhc], key)
		}
	}
	if len(e.pending[nhc]) == 0 {
		delete(e.pending, nhc)
		return true
	}
	return false
}

// forget drops the expectations of a deleted NodeHealthCheck.
func (e *Expectations) forget(nhc string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, nhc)
}

func (e *Expectations) expect(nhc, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending[nhc] == nil {
		e.pending[nhc] = map[string]time.Time{}
	}
	e.pending[nhc][key] = e.clock.Now().Add(ExpectationsTTL)
}

func (e *Expectations) observe(nhc, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending[nhc], key)
}
