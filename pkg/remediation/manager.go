package remediation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// Manager keeps the kinds of every NodeHealthCheck watched (watch.go),
// reads their remediation state from the informers (read.go), and carries
// out their plans (apply.go).
type Manager struct {
	informers *kinds.Informers
	templates *templateResolver
	// clock is the time of the reads.
	clock clock.PassiveClock
	// inFlight is the ledger of the writes under way, and of the
	// control-plane slot.
	inFlight *inFlight
	writer   *resourceWriter
	// discovery lists the kinds the API serves, to look for remediation
	// resources that outlived their NodeHealthCheck; nil looks for none.
	discovery discovery.DiscoveryInterface
	// leases are the node leases; nil when the controller takes none.
	leases *nodeleases.Keeper
	// confirmer confirms each create just before it is sent (ConfirmWith).
	confirmer Confirmer
	// everyKindWatched is set once the kinds of every NodeHealthCheck were
	// watched together (WatchAll): from then on, the control-plane
	// remediations of all of them are known once their informers synced.
	everyKindWatched atomic.Bool

	mu sync.Mutex
	// handlers hear of every change, after the ledger.
	handlers []ResourceChangeFunc
}

// Config is what a Manager works with.
type Config struct {
	// Context bounds the informers.
	Context context.Context
	Dynamic dynamic.Interface
	// MetadataOnly lists and watches the kinds used for templates alone, for
	// their metadata (NewMetadataOnlyClient). Nil is Dynamic, for a fake API
	// server that serves whole objects either way.
	MetadataOnly dynamic.Interface
	Kube         kubernetes.Interface
	// Mapper resolves template kinds. Nil is a discovery mapper through
	// Kube, which notices CRDs installed later when it is reset.
	Mapper meta.ResettableRESTMapper
	// Leases are the node leases; nil takes none.
	Leases *nodeleases.Keeper
	// Clock is the time of retries, caches and the writes under way.
	Clock clock.PassiveClock
}

// New returns a manager of remediation resources of any kind.
func New(cfg Config) *Manager {
	mapper := cfg.Mapper
	var cached discovery.CachedDiscoveryInterface
	if mapper == nil {
		cached = memory.NewMemCacheClient(cfg.Kube.Discovery())
		mapper = restmapper.NewDeferredDiscoveryRESTMapper(cached)
	}
	metadataOnly := cfg.MetadataOnly
	if metadataOnly == nil {
		metadataOnly = cfg.Dynamic
	}
	informers := kinds.New(cfg.Context, cfg.Dynamic, metadataOnly, cfg.Clock)
	m := newManager(informers, newTemplateResolver(mapper, informers, cfg.Clock), cfg.Clock, newResourceWriter(cfg.Dynamic, cfg.Kube), cfg.Leases)
	if cached != nil {
		m.discovery = cached
	}
	return m
}

// newManager wires a manager from its parts. The ledger of writes under way
// hears of the informers' changes before any handler, so that a
// NodeHealthCheck woken by a change finds its writes settled.
func newManager(informers *kinds.Informers, templates *templateResolver, clock clock.PassiveClock, writer *resourceWriter, leases *nodeleases.Keeper) *Manager {
	m := &Manager{informers: informers, templates: templates, clock: clock, inFlight: newInFlight(clock), writer: writer, leases: leases}
	informers.AddChangeHandler(m.changed)
	return m
}

// ResourceChangeFunc hears of a change of a template or remediation
// resource that the informers see; deleted is true for deletions, when obj
// is the last state known. confirmed names the NodeHealthChecks whose own
// create the change confirms: the sync that sent it recorded the outcome.
type ResourceChangeFunc func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string)

// AddChangeHandler adds a handler that hears of every change of a template
// or remediation resource the informers see.
func (m *Manager) AddChangeHandler(handler ResourceChangeFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, handler)
}

// KindChangeFunc hears of a kind whose informer synced or stopped failing:
// what every NodeHealthCheck may read of it changed.
type KindChangeFunc func(gvr schema.GroupVersionResource)

// AddKindChangeHandler adds a handler that hears of every kind whose
// informer synced or failed.
func (m *Manager) AddKindChangeHandler(handler KindChangeFunc) {
	m.informers.AddStateChangeHandler(kinds.StateChangeFunc(handler))
}

// changed settles the writes under way a change shows, then tells the
// handlers.
func (m *Manager) changed(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	confirmed := m.inFlight.settle(gvr, obj, deleted)
	m.mu.Lock()
	handlers := m.handlers
	m.mu.Unlock()
	for _, handler := range handlers {
		handler(gvr, obj, deleted, confirmed)
	}
}

// AddLeaseChangeHandler adds a handler that hears of every change of a node
// lease; without leases, it never hears of any.
func (m *Manager) AddLeaseChangeHandler(handler nodeleases.HolderChangeFunc) error {
	if m.leases == nil {
		return nil
	}
	return m.leases.AddChangeHandler(handler)
}

// Running lists the kinds with a running informer.
func (m *Manager) Running() []schema.GroupVersionResource {
	return m.informers.Running()
}

// Forget stops the informers only a deleted NodeHealthCheck used, and drops
// its deletes under way; its creates hold their nodes until they are seen
// or looked up gone.
func (m *Manager) Forget(nhc string) {
	m.informers.Use(nhc, kinds.Kinds{})
	m.inFlight.forget(nhc)
}

// Confirm says, just before a create is sent, why it must not be after all,
// or "" to send it; unconfirmed is true when the caches still showed the
// need but the API server did not. An error is a check that could not be
// made: the create is not sent, and the sync retried.
type Confirm func(ctx context.Context, c health.Creation) (why string, unconfirmed bool, err error)

// Confirmer confirms creates just before they are sent, against the node
// and the NodeHealthCheck as the API server has them: what the act layer
// does not keep. The controller hands it in once (ConfirmWith).
type Confirmer interface {
	// Confirmation returns the check of one sync's creates for a
	// NodeHealthCheck's plan; they share what it reads once a sync.
	Confirmation(ctx context.Context, nhc string, plan *health.Plan) Confirm
}

// errNoConfirmer refuses every create of a manager no Confirmer was handed
// to: a create that was not confirmed is never sent.
var errNoConfirmer = errors.New("no confirmation of creates was set up")

// ConfirmWith hands in the check of every create, before the first Apply.
func (m *Manager) ConfirmWith(c Confirmer) { m.confirmer = c }

// confirmation returns the check of one Apply's creates.
func (m *Manager) confirmation(ctx context.Context, nhc string, plan *health.Plan) Confirm {
	if m.confirmer == nil {
		return func(context.Context, health.Creation) (string, bool, error) { return "", false, errNoConfirmer }
	}
	return m.confirmer.Confirmation(ctx, nhc, plan)
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
