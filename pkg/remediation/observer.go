package remediation

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// Observer keeps the kinds of every NodeHealthCheck watched (watch.go) and
// reads their remediation state from the caches (read.go). It sends no
// write; Watch and WatchAll alone talk to the API server (discovery, and
// templates read with GET), Read never does.
type Observer struct {
	informers *kinds.Informers
	templates *templates.Resolver
	// clock is the time of the reads.
	clock clock.PassiveClock
	// ledger is the one the Writer books, read here: the writes under way
	// and the control-plane slot.
	ledger *inflight.Ledger
	// discovery lists the kinds the API serves, to look for remediation
	// resources that outlived their NodeHealthCheck; nil looks for none.
	discovery groupsLister
	// leases reads the node leases; nil when the controller takes none.
	leases LeaseReader
	// everyKindWatched is set once the kinds of every NodeHealthCheck were
	// watched together (WatchAll): from then on, the control-plane
	// remediations of all of them are known once their informers synced.
	everyKindWatched atomic.Bool

	mu sync.Mutex
	// handlers hear of every change, after the ledger.
	handlers []ResourceChangeFunc
	// slotHandlers hear of a control-plane slot given up with no resource.
	slotHandlers []func()
}

// groupsLister lists the resources of every group version the API serves
// (served.Kinds).
type groupsLister interface {
	GroupsAndResources(ctx context.Context) ([]*metav1.APIResourceList, error)
}

// LeaseReader reads the node leases from their cache: nil while it has not
// synced, with the problem when they cannot be listed.
type LeaseReader interface {
	Read() (*health.Leases, *health.Problem, error)
}

// ResourceChangeFunc hears of a change of a template or remediation
// resource that the informers see; deleted is true for deletions, when obj
// is the last state known. confirmed names the NodeHealthChecks whose own
// create the change confirms: the sync that sent it recorded the outcome.
type ResourceChangeFunc func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string)

// AddChangeHandler adds a handler that hears of every change of a template
// or remediation resource the informers see.
func (o *Observer) AddChangeHandler(handler ResourceChangeFunc) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handlers = append(o.handlers, handler)
}

// AddSlotFreedHandler adds a handler that hears of a control-plane create
// that gave the cluster's one control-plane slot up with no resource to
// show it (failed, refused, looked up gone): no resource event tells the
// NodeHealthChecks it held back.
func (o *Observer) AddSlotFreedHandler(handler func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.slotHandlers = append(o.slotHandlers, handler)
}

// slotFreed tells the slot handlers of a slot given up.
func (o *Observer) slotFreed() {
	o.mu.Lock()
	handlers := o.slotHandlers
	o.mu.Unlock()
	for _, handler := range handlers {
		handler()
	}
}

// KindChangeFunc hears of a kind whose informer synced or stopped failing:
// what every NodeHealthCheck may read of it changed; users, when not nil,
// are the only ones concerned (a retry failed again as before).
type KindChangeFunc func(gvr schema.GroupVersionResource, users []string)

// AddKindChangeHandler adds a handler that hears of every kind whose
// informer synced or failed.
func (o *Observer) AddKindChangeHandler(handler KindChangeFunc) {
	o.informers.AddStateChangeHandler(kinds.StateChangeFunc(handler))
}

// changed tells the handlers of a change, once the ledger settled the
// writes under way it shows (New wires the two).
func (o *Observer) changed(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string) {
	o.mu.Lock()
	handlers := o.handlers
	o.mu.Unlock()
	for _, handler := range handlers {
		handler(gvr, obj, deleted, confirmed)
	}
}

// Running lists the kinds with a running informer.
func (o *Observer) Running() []schema.GroupVersionResource {
	return o.informers.Running()
}

// Forget stops the informers only a deleted NodeHealthCheck used, and drops
// its deletes under way; its creates hold their nodes until they are seen
// or looked up gone.
func (o *Observer) Forget(nhc string) {
	o.informers.Use(nhc, kinds.Kinds{})
	o.ledger.Forget(nhc)
}

// kindList names resources for a message, sorted.
func kindList(resources []schema.GroupVersionResource) string {
	names := make([]string, len(resources))
	for i, gvr := range resources {
		names[i] = gvr.GroupResource().String()
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
