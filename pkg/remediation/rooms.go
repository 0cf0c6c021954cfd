package remediation

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/served"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

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
	// the remediation kinds to look for leftovers, and sends the deletes
	// whose answer says whether the resource went at once. Nil with no
	// Mapper resolves no kind and looks for no leftovers; nil, no delete
	// is known to have gone at once.
	RESTConfig *rest.Config
	// Mapper resolves template kinds instead of RESTConfig's discovery.
	Mapper templates.KindMapper
	// Leases reads the node leases; nil takes none.
	Leases LeaseReader
	// Access tells a write the controller's role forbids from one an
	// admission webhook or plugin refused, both 403; nil counts every 403
	// as the role's.
	Access AccessReviewer
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
		mapper = templates.Resettable{RESTMapper: meta.NewDefaultRESTMapper(nil)}
	}
	metadataOnly := cfg.MetadataOnly
	if metadataOnly == nil {
		metadataOnly = cfg.Dynamic
	}
	client, err := newResourceClient(cfg.Dynamic, cfg.RESTConfig, cfg.NodeClient)
	if err != nil {
		return nil, nil, err
	}
	informers := kinds.New(cfg.Context, cfg.Dynamic, metadataOnly, cfg.Clock)
	o, w := newRooms(informers, newResolver(mapper, informers, cfg.Dynamic, cfg.Clock), cfg.Clock, client)
	o.discovery, o.leases = discovery, cfg.Leases
	w.access = cfg.Access
	return o, w, nil
}

// newRooms builds the two rooms around their informers and one ledger.
// The ledger hears of the informers' changes, and of kinds that synced
// again, before the Observer's handlers, so that a NodeHealthCheck woken
// by a change finds its writes settled, or due for a look-up.
func newRooms(informers *kinds.Informers, resolver *templates.Resolver, clock clock.PassiveClock, client *resourceClient) (*Observer, *Writer) {
	ledger := inflight.New(clock)
	o := &Observer{informers: informers, templates: resolver, clock: clock, ledger: ledger}
	ledger.OnSlotFreed(o.slotFreed)
	informers.AddChangeHandler(func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
		o.changed(gvr, obj, deleted, ledger.Settle(gvr, obj, deleted))
	})
	informers.AddStateChangeHandler(func(gvr schema.GroupVersionResource, users []string) {
		if users == nil && informers.State(gvr).Synced {
			ledger.Resynced(gvr)
		}
	})
	return o, &Writer{informers: informers, templates: resolver, ledger: ledger, client: client}
}

// newResolver returns a template resolver that reads the informers' caches.
func newResolver(mapper templates.KindMapper, informers *kinds.Informers, client dynamic.Interface, clock clock.PassiveClock) *templates.Resolver {
	return templates.NewResolver(mapper, templateCaches{informers.View}, client, clock)
}

// templateCaches show the resolver the informers' caches.
type templateCaches struct{ kinds.View }

func (c templateCaches) CacheState(gvr schema.GroupVersionResource) templates.CacheState {
	state := c.State(gvr)
	return templates.CacheState{Synced: state.Synced, Err: state.Err}
}
