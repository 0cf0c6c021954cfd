package remediation

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// ExpectationsTTL bounds how long an unobserved write holds a node back,
// should its informer event never come.
const ExpectationsTTL = time.Minute

// Expectations remembers this controller's creates and deletes of remediation
// resources until the informers show them, per NodeHealthCheck and node. A
// node with an unobserved write gets no new action: its resources in the
// cache are not what the API server has, and acting on them could create a
// resource twice. The NodeHealthCheck's other nodes go on. After a restart
// there is nothing to expect, because the informers have synced before the
// first sync.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// pending maps a NodeHealthCheck's name to its unobserved writes.
	pending map[string]map[string]expectation
}

// expectation is one unobserved write.
type expectation struct {
	node string
	// creation is true for a create, false for a delete.
	creation bool
	// resource, namespace and name name the resource a create makes: when
	// its expectation lapses, it is looked up (lapsedCreations).
	resource        schema.GroupVersionResource
	namespace, name string
	// lapses is when the expectation is given up.
	lapses time.Time
}

// NewExpectations returns empty expectations.
func NewExpectations(clock clock.PassiveClock) *Expectations {
	return &Expectations{clock: clock, pending: map[string]map[string]expectation{}}
}

func creationKey(gvr schema.GroupVersionResource, namespace, node, template string) string {
	return "create " + gvr.String() + " " + namespace + " " + node + " " + template
}

func deletionKey(uid types.UID) string { return "delete " + string(uid) }

// expectCreation records a create about to be sent, of the resource name.
func (e *Expectations) expectCreation(nhc string, gvr schema.GroupVersionResource, namespace, name, node, template string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expectCreationLocked(nhc, gvr, namespace, name, node, template)
}

// expectFirstCreation records the create of a node's first remediation
// about to be sent, unless another NodeHealthCheck has a create for the node
// under way: it returns that one's name instead. Checking and recording at
// once keeps two NodeHealthChecks from starting on one node at once.
func (e *Expectations) expectFirstCreation(nhc string, gvr schema.GroupVersionResource, namespace, name, node, template string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	for other, pending := range e.pending {
		if other == nhc {
			continue
		}
		for _, x := range pending {
			if x.creation && x.node == node && now.Before(x.lapses) {
				return other
			}
		}
	}
	e.expectCreationLocked(nhc, gvr, namespace, name, node, template)
	return ""
}

// forgetCreation withdraws a creation that certainly did not happen, or
// whose result the cache shows already.
func (e *Expectations) forgetCreation(nhc string, gvr schema.GroupVersionResource, namespace, node, template string) {
	e.observe(nhc, creationKey(gvr, namespace, node, template))
}

// expectDeletion records a delete about to be sent.
func (e *Expectations) expectDeletion(nhc, node string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.add(nhc, deletionKey(uid), expectation{node: node})
}

// forgetDeletion withdraws a deletion that certainly did not happen, or
// whose result the cache shows already.
func (e *Expectations) forgetDeletion(nhc string, uid types.UID) {
	e.observe(nhc, deletionKey(uid))
}

// settle settles the expectations an informer's change satisfies: a resource
// that exists settles its creation, a deleted one, or one with a deletion
// timestamp, its deletion. It returns the NodeHealthChecks whose create it
// confirms.
func (e *Expectations) settle(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) (confirmed []string) {
	template := obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
	for _, nhc := range OwnerNames(obj) {
		if !deleted && e.observe(nhc, creationKey(gvr, obj.GetNamespace(), NodeOf(obj), template)) {
			confirmed = append(confirmed, nhc)
		}
		if deleted || obj.GetDeletionTimestamp() != nil {
			e.observe(nhc, deletionKey(obj.GetUID()))
		}
	}
	return confirmed
}

// pendingNodes returns the nodes of a NodeHealthCheck with a write that was
// neither observed nor has lapsed.
func (e *Expectations) pendingNodes(nhc string) map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	var nodes map[string]bool
	for key, x := range e.pending[nhc] {
		if !now.Before(x.lapses) {
			delete(e.pending[nhc], key)
			continue
		}
		if nodes == nil {
			nodes = map[string]bool{}
		}
		nodes[x.node] = true
	}
	if len(e.pending[nhc]) == 0 {
		delete(e.pending, nhc)
	}
	return nodes
}

// pendingResources lists the kinds of a NodeHealthCheck's creates under
// way: they stay watched until their informer shows the create, whatever
// the spec and status say meanwhile.
func (e *Expectations) pendingResources(nhc string) []schema.GroupVersionResource {
	e.mu.Lock()
	defer e.mu.Unlock()
	var resources []schema.GroupVersionResource
	for _, x := range e.pending[nhc] {
		if x.creation && !slices.Contains(resources, x.resource) {
			resources = append(resources, x.resource)
		}
	}
	return resources
}

// lapsedCreation is a create whose expectation lapsed unobserved.
type lapsedCreation struct {
	nhc, key string
	expectation
}

// lapsedCreations removes and returns the creates of every NodeHealthCheck
// whose expectation lapsed unobserved. The informer may be behind (a watch
// that stops sending while its connection stays open shows nothing until
// it times out): its cache is not to be believed about them, and the
// caller looks them up at the API server (lookUpLapsed). Every
// NodeHealthCheck's, since a create under way holds its node against the
// others too, and its own NodeHealthCheck may not sync (disabled).
func (e *Expectations) lapsedCreations() []lapsedCreation {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	var lapsed []lapsedCreation
	for nhc, pending := range e.pending {
		for key, x := range pending {
			if x.creation && !now.Before(x.lapses) {
				lapsed = append(lapsed, lapsedCreation{nhc: nhc, key: key, expectation: x})
				delete(pending, key)
			}
		}
	}
	return lapsed
}

// expectAgain records again a lapsed create that the API server shows,
// for another ExpectationsTTL.
func (e *Expectations) expectAgain(l lapsedCreation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.add(l.nhc, l.key, l.expectation)
}

// forget drops the expectations of a deleted NodeHealthCheck.
func (e *Expectations) forget(nhc string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, nhc)
}

func (e *Expectations) expectCreationLocked(nhc string, gvr schema.GroupVersionResource, namespace, name, node, template string) {
	e.add(nhc, creationKey(gvr, namespace, node, template), expectation{node: node, creation: true, resource: gvr, namespace: namespace, name: name})
}

// add records an expectation, which lapses after ExpectationsTTL; e.mu is
// held.
func (e *Expectations) add(nhc, key string, x expectation) {
	if e.pending[nhc] == nil {
		e.pending[nhc] = map[string]expectation{}
	}
	x.lapses = e.clock.Now().Add(ExpectationsTTL)
	e.pending[nhc][key] = x
}

// observe settles an expectation; it tells whether one was pending.
func (e *Expectations) observe(nhc, key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, pending := e.pending[nhc][key]
	delete(e.pending[nhc], key)
	return pending
}
