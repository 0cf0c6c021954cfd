package remediation

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Index names of the dynamic informers.
const (
	// ownerIndex keys resources by the UID of each NodeHealthCheck owning them.
	ownerIndex = "nodehealthcheck-owner"
	// controlPlaneIndex keys control-plane remediations by their node.
	controlPlaneIndex = "control-plane-node"
	// nodeIndex keys the resources NodeHealthChecks own by their node.
	nodeIndex = "nodehealthcheck-node"
)

// ChangeFunc hears of a change an informer sees; deleted is true for
// deletions, when obj is the last state known.
type ChangeFunc func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool)

// Informers runs one dynamic informer per resource that some NodeHealthCheck
// uses: the kinds of its templates and of its remediation resources. An
// informer starts when the first NodeHealthCheck uses its resource and stops
// when the last one no longer does, so the controller watches only kinds
// that matter, whichever remediators are installed.
type Informers struct {
	ctx    context.Context
	client dynamic.Interface
	// grace is how long an informer may fail to list before its error counts.
	grace time.Duration

	mu sync.Mutex
	// handlers hear of every change, in the order they were added.
	handlers []ChangeFunc
	running  map[schema.GroupVersionResource]*runningInformer
	// uses holds the resources each NodeHealthCheck uses, by its name.
	uses map[string]sets.Set[schema.GroupVersionResource]
}

type runningInformer struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	users    sets.Set[string]
	started  time.Time
	errors   watchErrors
}

// NewInformers returns a manager whose informers run until ctx ends.
func NewInformers(ctx context.Context, client dynamic.Interface) *Informers {
	return &Informers{
		ctx: ctx, client: client, grace: watchGrace,
		running: map[schema.GroupVersionResource]*runningInformer{},
		uses:    map[string]sets.Set[schema.GroupVersionResource]{},
	}
}

// AddChangeHandler adds a handler that hears of every change of every
// informer, after the handlers added before it.
func (m *Informers) AddChangeHandler(handler ChangeFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, handler)
}

// Use sets the resources a NodeHealthCheck uses, starting and stopping
// informers as needed. Use(nhc) with no resources forgets the NodeHealthCheck.
func (m *Informers) Use(nhc string, resources ...schema.GroupVersionResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := sets.New(resources...)
	had := m.uses[nhc]
	for gvr := range want.Difference(had) {
		r, ok := m.running[gvr]
		if !ok {
			r = m.start(gvr)
			m.running[gvr] = r
		}
		r.users.Insert(nhc)
	}
	for gvr := range had.Difference(want) {
		r := m.running[gvr]
		r.users.Delete(nhc)
		if r.users.Len() == 0 {
			r.stop()
			delete(m.running, gvr)
			klog.FromContext(m.ctx).V(2).Info("Stopped informer, no NodeHealthCheck uses it", "resource", gvr)
		}
	}
	if want.Len() == 0 {
		delete(m.uses, nhc)
	} else {
		m.uses[nhc] = want
	}
}

func (m *Informers) start(gvr schema.GroupVersionResource) *runningInformer {
	logger := klog.FromContext(m.ctx)
	informer := dynamicinformer.NewFilteredDynamicInformer(m.client, gvr, "", 0, cache.Indexers{
		ownerIndex:        indexByOwner,
		controlPlaneIndex: indexByControlPlaneNode,
		nodeIndex:         indexByNode,
	}, nil).Informer()
	r := &runningInformer{informer: informer, users: sets.New[string](), started: time.Now()}
	// Managed fields are never read; dropping them halves the memory of
	// small objects.
	_ = informer.SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return obj, nil
	})
	r.errors.record(informer)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.notify(gvr, obj, false) },
		UpdateFunc: func(_, obj any) { m.notify(gvr, obj, false) },
		DeleteFunc: func(obj any) { m.notify(gvr, obj, true) },
	})
	ctx, stop := context.WithCancel(m.ctx)
	r.stop = stop
	go informer.RunWithContext(ctx)
	logger.V(2).Info("Started informer", "resource", gvr)
	return r
}

func (m *Informers) notify(gvr schema.GroupVersionResource, obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	m.mu.Lock()
	handlers := m.handlers
	m.mu.Unlock()
	for _, handle := range handlers {
		handle(gvr, u, deleted)
	}
}

func (m *Informers) informer(gvr schema.GroupVersionResource) *runningInformer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running[gvr]
}

// Running lists the resources with a running informer.
func (m *Informers) Running() []schema.GroupVersionResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sets.KeySet(m.running).UnsortedList()
}

// Synced tells whether the informers of all these resources have synced.
func (m *Informers) Synced(resources ...schema.GroupVersionResource) bool {
	for _, gvr := range resources {
		if r := m.informer(gvr); r == nil || !r.informer.HasSynced() {
			return false
		}
	}
	return true
}

// watchError returns the last list or watch error of a resource's informer
// while it has not synced, such as a Forbidden for missing RBAC.
func (m *Informers) watchError(gvr schema.GroupVersionResource) error {
	r := m.informer(gvr)
	if r == nil {
		return nil
	}
	return r.errors.unsynced(r.informer)
}

// watchGrace is how long an informer may fail to list before its error is
// reported: RBAC granted together with a NodeHealthCheck, or a CRD being
// installed, may take a moment to apply.
const watchGrace = 5 * time.Second

// lastingWatchError returns the list or watch error of a resource's
// informer that has not synced within watchGrace of its start, or nil.
func (m *Informers) lastingWatchError(gvr schema.GroupVersionResource) error {
	r := m.informer(gvr)
	if r == nil || time.Since(r.started) < m.grace {
		return nil
	}
	return m.watchError(gvr)
}

// Get returns an object from a resource's cache, or nil.
func (m *Informers) Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	r := m.informer(gvr)
	if r == nil {
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := r.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	return obj.(*unstructured.Unstructured)
}

// ownedBy returns the resources a NodeHealthCheck owns, by its UID.
func (m *Informers) ownedBy(gvr schema.GroupVersionResource, uid types.UID) []*unstructured.Unstructured {
	return m.byIndex(gvr, ownerIndex, string(uid))
}

// controlPlaneNodes returns the control-plane nodes with a remediation
// resource of any kind watched, whoever owns it.
func (m *Informers) controlPlaneNodes() []string {
	var nodes []string
	for _, r := range m.runningInformers() {
		nodes = append(nodes, r.informer.GetIndexer().ListIndexFuncValues(controlPlaneIndex)...)
	}
	return nodes
}

// otherOwners returns, by node, the NodeHealthChecks but one that own
// remediation resources of any kind watched. It reads only the resources
// of NodeHealthChecks, through their node index.
func (m *Informers) otherOwners(except types.UID) map[string][]Owner {
	var owners map[string][]Owner
	for _, r := range m.runningInformers() {
		indexer := r.informer.GetIndexer()
		for _, node := range indexer.ListIndexFuncValues(nodeIndex) {
			objs, _ := indexer.ByIndex(nodeIndex, node)
			for _, obj := range objs {
				for _, owner := range Owners(obj.(*unstructured.Unstructured)) {
					if owner.UID == except || slices.Contains(owners[node], owner) {
						continue
					}
					if owners == nil {
						owners = map[string][]Owner{}
					}
					owners[node] = append(owners[node], owner)
				}
			}
		}
	}
	return owners
}

// otherOwner returns a NodeHealthCheck but one that owns a remediation
// resource of a node, of any kind watched, or "".
func (m *Informers) otherOwner(node string, except types.UID) string {
	for _, r := range m.runningInformers() {
		objs, _ := r.informer.GetIndexer().ByIndex(nodeIndex, node)
		for _, obj := range objs {
			for _, owner := range Owners(obj.(*unstructured.Unstructured)) {
				if owner.UID != except {
					return owner.Name
				}
			}
		}
	}
	return ""
}

func (m *Informers) runningInformers() []*runningInformer {
	m.mu.Lock()
	defer m.mu.Unlock()
	running := make([]*runningInformer, 0, len(m.running))
	for _, r := range m.running {
		running = append(running, r)
	}
	return running
}

func (m *Informers) byIndex(gvr schema.GroupVersionResource, index, key string) []*unstructured.Unstructured {
	r := m.informer(gvr)
	if r == nil {
		return nil
	}
	objs, err := r.informer.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	list := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		list = append(list, obj.(*unstructured.Unstructured))
	}
	return list
}

func indexByOwner(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, uid := range ownerUIDs(u) {
		keys = append(keys, string(uid))
	}
	return keys, nil
}

func indexByNode(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || len(ownerUIDs(u)) == 0 {
		return nil, nil
	}
	return []string{NodeOf(u)}, nil
}

func indexByControlPlaneNode(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	if _, ok := u.GetLabels()[v1alpha1.ControlPlaneNodeLabel]; !ok {
		return nil, nil
	}
	return []string{NodeOf(u)}, nil
}
