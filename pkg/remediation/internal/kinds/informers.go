package kinds

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// How long a kind whose informer was stopped, because it may not be listed
// or watched or is no longer served, stays unwatched before it is tried
// again.
const (
	// RetryInterval is upstream's requeue for a template problem:
	// a remediator whose access is restored works again within it.
	RetryInterval = 15 * time.Second
	// TemplateRetryInterval is long: a template kind that grants only get
	// is a normal setup, read with GET meanwhile (pkg/remediation's
	// templates/read.go). It is for a forbidden kind alone: one no longer
	// served is tried again after RetryInterval.
	TemplateRetryInterval = 10 * time.Minute
	// PassingRetryInterval is for an informer stopped because it could not
	// list for a passing reason before it ever synced (failedToSync): a
	// sync within it finds the kind still stopped, so that a failure that
	// wakes the kind's users does not start it again at once, in a loop.
	PassingRetryInterval = WatchGrace
)

// WatchGrace is how long an informer of remediation resources may fail to
// list before its error counts: RBAC granted together with a
// NodeHealthCheck, or a CRD being installed, may take a moment to apply.
const WatchGrace = 5 * time.Second

// Log messages, at level 2.
const (
	logStarted         = "Started informer"
	logStoppedUnused   = "Stopped informer, no NodeHealthCheck uses it"
	logKeptUnused      = "Kept informer that no NodeHealthCheck uses, until the remediation resources in its cache are gone"
	logStoppedFailing  = "Stopped informer: its kind may not be listed or watched, or is no longer served; it is tried again later"
	logStoppedUnsynced = "Stopped informer that has not listed its kind since it started; it is started again shortly, without client-go's back-off"
	logStartedAgain    = "Starting informer again"
)

// Kinds are the resources a NodeHealthCheck needs watched.
type Kinds struct {
	// Remediations are the kinds of its remediation resources: without
	// their informers, its resources are unknown.
	Remediations []schema.GroupVersionResource
	// Templates are its templates; a kind that may not be watched is read
	// with GET.
	Templates []NamedTemplate
}

// State is what is known of a kind's informer.
type State struct {
	// Synced is true when its cache holds what the API server has.
	Synced bool
	// Err is why the kind cannot be read: the error that stopped its
	// informer, or one that keeps it from syncing past the grace.
	Err error
	// RetryAt is when a stopped informer starts again; zero otherwise.
	RetryAt time.Time
}

// StateChangeFunc hears of a kind whose informer synced or stopped failing:
// what every NodeHealthCheck may read of it changed. users, when not nil,
// are the only NodeHealthChecks concerned: a retry failed as the try before
// it did, which changes nothing for the others, while those that use the
// kind learn when it is tried again.
type StateChangeFunc func(gvr schema.GroupVersionResource, users []string)

// Informers runs one dynamic informer per resource that some NodeHealthCheck
// uses: the kinds of its templates and of its remediation resources. An
// informer starts when the first NodeHealthCheck uses its resource and stops
// when the last one no longer does, so the controller watches only kinds
// that matter, whichever remediators are installed. An informer that may not
// list or watch its kind, or whose kind is no longer served, is stopped
// instead of retrying forever, and started again after a while. Informers
// starts, stops and retries; what they show is read through its View.
type Informers struct {
	View
	ctx    context.Context
	client dynamic.Interface
	// metadata lists and watches the kinds used for templates alone: it asks
	// the API server for their metadata only (PartialObjectMetadata), so
	// that what others store in them never reaches the process.
	metadata dynamic.Interface
	// handlers hear of every change, in the order they were added; mu
	// guards them.
	handlers []ObjectChangeFunc
	// kindHandlers hear of kinds that synced or failed.
	kindHandlers []StateChangeFunc
}

// View reads what the informers show and how each kind stands: their
// caches, the owners and control-plane nodes they index, whether a kind
// synced or why it cannot be read. It starts, stops and forbids nothing.
type View struct {
	*kindStates
}

// kindStates are the informers and what is known of each kind, shared by
// Informers and its View.
type kindStates struct {
	clock clock.PassiveClock
	// grace is how long an informer of remediation resources may fail to
	// list before its error counts.
	grace time.Duration

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*runningInformer
	// stopped holds the kinds whose informer failed, until they are retried.
	stopped map[schema.GroupVersionResource]stoppedInformer
	// uses holds the kinds each NodeHealthCheck uses, by its name.
	uses map[string]use
	// unread are the kinds of remediation resources whose informer was
	// stopped for an error before it ever synced, with when and why: what
	// they hold is unknown until one syncs (AllRead, RetryUnread).
	unread map[schema.GroupVersionResource]stoppedInformer
	// named are the templates some NodeHealthCheck names, whose
	// spec.template the caches keep. Its own lock: the informers' transforms
	// read it, and mu is held while they are asked whether they synced.
	named struct {
		sync.RWMutex
		// kinds are the named templates' kinds, by reference.
		kinds map[TemplateRef]string
	}
}

// ObjectChangeFunc hears of a change an informer sees; deleted is true for
// deletions, when obj is the last state known.
type ObjectChangeFunc func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool)

type use struct {
	remediations, templates sets.Set[schema.GroupVersionResource]
	// listed are the remediation kinds as Use was given them.
	listed []schema.GroupVersionResource
	named  []NamedTemplate
}

func (u use) all() sets.Set[schema.GroupVersionResource] {
	return u.remediations.Union(u.templates)
}

// New returns the remediation kinds' informers, running until ctx ends.
// metadata lists and watches for metadata alone (client itself in tests
// whose fake API server does not tell the two apart).
func New(ctx context.Context, client, metadata dynamic.Interface, clk clock.PassiveClock) *Informers {
	return &Informers{
		View: View{&kindStates{
			clock: clk, grace: WatchGrace,
			running: map[schema.GroupVersionResource]*runningInformer{},
			stopped: map[schema.GroupVersionResource]stoppedInformer{},
			uses:    map[string]use{},
			unread:  map[schema.GroupVersionResource]stoppedInformer{},
		}},
		ctx: ctx, client: client, metadata: metadata,
	}
}

// AddChangeHandler adds a handler that hears of every change of every
// informer, after the handlers added before it.
func (inf *Informers) AddChangeHandler(handler ObjectChangeFunc) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.handlers = append(inf.handlers, handler)
}

// AddStateChangeHandler adds a handler that hears of every kind whose
// informer synced or failed.
func (inf *Informers) AddStateChangeHandler(handler StateChangeFunc) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.kindHandlers = append(inf.kindHandlers, handler)
}

// Use sets the kinds a NodeHealthCheck uses, starting the informers it
// needs, again if their retry is due, and stopping those no one needs.
// Use(nhc, Kinds{}) forgets the NodeHealthCheck.
func (inf *Informers) Use(nhc string, kinds Kinds) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	had := inf.uses[nhc]
	want := had
	// A sync's kinds are nearly always its last sync's: then no set is
	// built again.
	if !slices.Equal(had.listed, kinds.Remediations) || !slices.Equal(had.named, kinds.Templates) {
		want = use{remediations: sets.New(kinds.Remediations...), templates: sets.New[schema.GroupVersionResource](),
			listed: slices.Clone(kinds.Remediations), named: slices.Clone(kinds.Templates)}
		for _, t := range kinds.Templates {
			want.templates.Insert(t.Ref.Resource)
		}
		if want.all().Len() == 0 {
			delete(inf.uses, nhc)
		} else {
			inf.uses[nhc] = want
		}
		if !slices.Equal(had.named, want.named) {
			inf.renameTemplates()
		}
		for gvr := range had.all().Difference(want.all()) {
			inf.stopIfUnused(gvr)
		}
	}
	for gvr := range want.remediations {
		inf.ensure(gvr)
	}
	for gvr := range want.templates {
		if !want.remediations.Has(gvr) {
			inf.ensure(gvr)
		}
	}
	inf.retryUnused()
}

// stopIfUnused stops a kind's informer when no NodeHealthCheck uses it and
// it shows no resource a NodeHealthCheck owns. The resources of a deleted
// NodeHealthCheck, or of one whose templates changed, go on remediating
// their nodes until they are gone (a remediator's finalizer holds them
// while it works): they keep the nodes busy for quorum and for every other
// NodeHealthCheck. So does what a kind stopped for a lasting error showed:
// it is kept, and tried again (retryUnused), until the kind can be read or
// shows nothing. mu is held.
func (inf *Informers) stopIfUnused(gvr schema.GroupVersionResource) {
	if inf.users(gvr).Len() > 0 {
		return
	}
	if s, ok := inf.stopped[gvr]; ok {
		if s.shown.empty() {
			delete(inf.stopped, gvr)
		}
		return
	}
	r, ok := inf.running[gvr]
	if !ok {
		return
	}
	if r.informer.HasSynced() && len(r.informer.GetIndexer().ListIndexFuncValues(nodeIndex)) > 0 || !r.informer.HasSynced() && (!r.remembered.empty() || r.looking) {
		klog.FromContext(inf.ctx).V(2).Info(logKeptUnused, "resource", gvr)
		return
	}
	r.stop()
	delete(inf.running, gvr)
	klog.FromContext(inf.ctx).V(2).Info(logStoppedUnused, "resource", gvr)
}

// retryUnused tries again the kinds no NodeHealthCheck uses that were
// stopped for a lasting error and showed resources then, when their retry
// is due. mu is held.
func (inf *Informers) retryUnused() {
	for gvr := range inf.stopped {
		if inf.users(gvr).Len() == 0 {
			inf.ensure(gvr)
		}
	}
}

// ensure starts a kind's informer unless it runs, or failed and is not due
// for a retry.
func (inf *Informers) ensure(gvr schema.GroupVersionResource) {
	if r, ok := inf.running[gvr]; ok {
		if !r.metadataOnly || inf.templatesOnly(gvr) {
			return
		}
		// A template kind now read for remediation resources too needs
		// them whole.
		r.stop()
		delete(inf.running, gvr)
	}
	var stopped stoppedInformer
	if s, ok := inf.stopped[gvr]; ok {
		if inf.clock.Now().Before(s.retryAt) {
			return
		}
		delete(inf.stopped, gvr)
		stopped = s
		klog.FromContext(inf.ctx).V(2).Info(logStartedAgain, "resource", gvr, "lastError", s.err)
	}
	inf.running[gvr] = inf.start(gvr, stopped)
}

// users are the NodeHealthCheck that use a kind; mu is held.
func (v View) users(gvr schema.GroupVersionResource) sets.Set[string] {
	users := sets.New[string]()
	for nhc, u := range v.uses {
		if u.all().Has(gvr) {
			users.Insert(nhc)
		}
	}
	return users
}

// usedForRemediations tells whether some NodeHealthCheck reads a kind's
// remediation resources; mu is held.
func (v View) usedForRemediations(gvr schema.GroupVersionResource) bool {
	for _, u := range v.uses {
		if u.remediations.Has(gvr) {
			return true
		}
	}
	return false
}
