package remediation

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/served"
)

// Observer keeps the kinds of every NodeHealthCheck watched (watch.go) and
// reads their remediation state from the caches (read.go). It sends no
// write; Watch alone talks to the API server (discovery, and templates
// read with GET), Read never does.
type Observer struct {
	informers *kinds.Informers
	templates *templateResolver
	// clock is the time of the reads.
	clock clock.PassiveClock
	// inFlight is the ledger the Writer books, read here: the writes under
	// way and the control-plane slot.
	inFlight *inFlight
	// nodes reads the nodes of remediations on record elsewhere.
	nodes NodeGetter
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
}

// NodeGetter reads a node from the node cache.
type NodeGetter interface {
	Get(name string) (*health.Node, error)
}

// LeaseReader reads the node leases from their cache: nil while it has not
// synced, with the problem when they cannot be listed.
type LeaseReader interface {
	Read() (*health.Leases, *health.Problem, error)
}

// Config is what the remediation rooms work with.
type Config struct {
	// Context bounds the informers.
	Context context.Context
	Dynamic dynamic.Interface
	// MetadataOnly lists and watches the kinds used for templates alone, for
	// their metadata (NewMetadataOnlyClient). Nil is Dynamic, for a fake API
	// server that serves whole objects either way.
	MetadataOnly dynamic.Interface
	// NodeClient patches nodes: it removes the annotations of upstream's
	// remediations from them.
	NodeClient NodePatcher
	// RESTConfig reads what kinds the API server serves: it resolves
	// template kinds, noticing CRDs installed or removed later, and lists
	// the remediation kinds to look for leftovers. Nil with no Mapper
	// resolves no kind and looks for no leftovers.
	RESTConfig *rest.Config
	// Mapper resolves template kinds instead of RESTConfig's discovery.
	Mapper KindMapper
	// Nodes reads nodes from the node cache.
	Nodes NodeGetter
	// Leases reads the node leases; nil takes none.
	Leases LeaseReader
	// Clock is the time of retries, caches and the writes under way.
	Clock clock.PassiveClock
}

// New returns the two rooms of remediation resources of any kind, sharing
// their informers and the ledger of writes under way: the Observer, which
// watches and reads, and the Writer, which writes and books what it sends.
func New(cfg Config) (*Observer, *Writer, error) {
	mapper := cfg.Mapper
	var discovery groupsLister
	if mapper == nil && cfg.RESTConfig != nil {
		kinds, err := served.NewForConfig(cfg.RESTConfig)
		if err != nil {
			return nil, nil, err
		}
		mapper, discovery = kinds, kinds
	}
	if mapper == nil {
		mapper = resettable{meta.NewDefaultRESTMapper(nil)}
	}
	metadataOnly := cfg.MetadataOnly
	if metadataOnly == nil {
		metadataOnly = cfg.Dynamic
	}
	informers := kinds.New(cfg.Context, cfg.Dynamic, metadataOnly, cfg.Clock)
	templates := newTemplateResolver(mapper, informers, cfg.Clock)
	ledger := newInFlight(cfg.Clock)
	o := newObserver(informers, templates, cfg.Clock, ledger, cfg.Nodes, cfg.Leases)
	o.discovery = discovery
	return o, newWriter(informers, templates, ledger, newResourceClient(cfg.Dynamic, cfg.NodeClient)), nil
}

// newObserver wires an observer from its parts. The ledger of writes under
// way hears of the informers' changes before any handler, so that a
// NodeHealthCheck woken by a change finds its writes settled.
func newObserver(informers *kinds.Informers, templates *templateResolver, clock clock.PassiveClock, ledger *inFlight, nodes NodeGetter, leases LeaseReader) *Observer {
	o := &Observer{informers: informers, templates: templates, clock: clock, inFlight: ledger, nodes: nodes, leases: leases}
	informers.AddChangeHandler(o.changed)
	return o
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

// KindChangeFunc hears of a kind whose informer synced or stopped failing:
// what every NodeHealthCheck may read of it changed; users, when not nil,
// are the only ones concerned (a retry failed again as before).
type KindChangeFunc func(gvr schema.GroupVersionResource, users []string)

// AddKindChangeHandler adds a handler that hears of every kind whose
// informer synced or failed.
func (o *Observer) AddKindChangeHandler(handler KindChangeFunc) {
	o.informers.AddStateChangeHandler(kinds.StateChangeFunc(handler))
}

// changed settles the writes under way a change shows, then tells the
// handlers.
func (o *Observer) changed(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	confirmed := o.inFlight.settle(gvr, obj, deleted)
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
	o.inFlight.forget(nhc)
}

// bareTemplateRef identifies a template reference, whatever else it carries.
func bareTemplateRef(ref corev1.ObjectReference) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
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
