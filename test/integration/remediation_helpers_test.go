package integration

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// remediationEnv is the controller wired to the real API server as the
// binary wires it, but without workers: the tests call Sync themselves, at
// a time of their choosing.
type remediationEnv struct {
	// ctx carries the test's logger; it ends at cleanup.
	ctx  context.Context
	ctrl *controller.Controller
	// observer and writer are the controller's pkg/remediation.
	observer *remediation.Observer
	writer   *remediation.Writer
	// nodeLister and nhcLister read the controller's shared informers.
	nodeLister nodecache.Lister
	nhcLister  nhclisters.NodeHealthCheckLister
	// heard is what the remediation informers' change handlers last heard
	// of each remediation resource.
	heard *heardResources
	// recorder holds the events the controller records.
	recorder *record.FakeRecorder
	// clock is the controller's: the time Sync decides at.
	clock *clocktesting.FakeClock
	// mapperClock drives the throttle of API rediscovery (and the
	// expectations' time-to-live, as the binary uses one clock for both).
	mapperClock *clocktesting.FakePassiveClock
}

// newRemediationEnv starts a controller with its own informers; cleanup
// stops everything it started.
func newRemediationEnv(t *testing.T) *remediationEnv {
	t.Helper()
	return newRemediationEnvWith(t, nhcClient)
}

// newRemediationEnvWith is newRemediationEnv with the controller's own
// NodeHealthCheck client: its status writes and its reads past the cache.
func newRemediationEnvWith(t *testing.T, nhcClient versioned.Interface) *remediationEnv {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	env := &remediationEnv{
		ctx:         ctx,
		heard:       &heardResources{byUID: map[types.UID]heardResource{}},
		recorder:    record.NewFakeRecorder(10000),
		clock:       clocktesting.NewFakeClock(time.Now()),
		mapperClock: clocktesting.NewFakePassiveClock(time.Now()),
	}
	nodeInformer, err := nodecache.NewInformer(cluster.Config, 0)
	require.NoError(t, err)
	env.observer, env.writer, err = remediation.New(remediation.Config{Context: ctx, Dynamic: dynamicClient, NodeClient: kubeClient.CoreV1().Nodes(), RESTConfig: cluster.Config,
		Access: kubeClient.AuthorizationV1().SelfSubjectAccessReviews(), Clock: env.mapperClock})
	require.NoError(t, err)

	// The informers cmd/nhc-controller runs.
	nhcInformer, err := controller.NewNodeHealthCheckInformer(cluster.Config)
	require.NoError(t, err)
	env.nodeLister, env.nhcLister = nodeInformer.Lister(), nhcInformer.Lister()
	env.ctrl, err = controller.New(ctx, controller.Config{
		Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: nhcClient.RemediationV1alpha1(),
		Observer: env.observer, Changes: env.observer, Writer: env.writer,
		Recorder: env.recorder, Metrics: controller.NewMetrics(), Clock: env.clock,
	})
	require.NoError(t, err)
	// Added last, this handler hears of a change after the ledger and
	// the controller have.
	env.observer.AddChangeHandler(func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, _ []string) {
		env.heard.record(gvr, obj, deleted)
	})
	go nodeInformer.Informer().RunWithContext(ctx)
	go nhcInformer.Informer().RunWithContext(ctx)
	// Run with no workers takes no work from the queue that the event
	// handlers fill, and shuts that queue down when ctx ends.
	stopped := make(chan error, 1)
	go func() { stopped <- env.ctrl.Run(ctx, 0) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-stopped, "the controller's Run")
	})

	require.True(t, cache.WaitForCacheSync(ctx.Done(), nodeInformer.Informer().HasSynced), "node informer synced")
	require.True(t, cache.WaitForCacheSync(ctx.Done(), nhcInformer.Informer().HasSynced), "NodeHealthCheck informer synced")
	require.True(t, env.ctrl.CachesSynced())
	return env
}

// seen is what a user sees after a sync.
type seen struct {
	// NHC is the NodeHealthCheck as the API server has it.
	NHC *v1alpha1.NodeHealthCheck
	// Events are the events the sync recorded, as "type reason message".
	Events []string
}

// events returns the recorded events of a reason.
func (s seen) events(reason string) []string {
	var found []string
	for _, e := range s.Events {
		if fields := strings.SplitN(e, " ", 3); len(fields) == 3 && fields[1] == reason {
			found = append(found, e)
		}
	}
	return found
}

// sync runs the controller's Sync of a NodeHealthCheck at now, once the
// controller has caught up with the API server, and returns what the user
// sees then.
func (env *remediationEnv) sync(t *testing.T, name string, now time.Time) seen {
	t.Helper()
	env.clock.SetTime(now)
	env.waitToCatchUp(t, name)
	env.drainEvents()
	ctx, cancel := context.WithTimeout(env.ctx, time.Minute)
	defer cancel()
	_, err := env.ctrl.Sync(ctx, name)
	require.NoError(t, err)
	return seen{NHC: fw.GetNHC(t, name), Events: env.drainEvents()}
}

// waitToCatchUp waits until the controller sees what the API server has:
// its NodeHealthCheck lister the object, its Node lister the nodes that the
// NodeHealthCheck selects, no more and no fewer, each as the API server has
// it; the remediation informers synced, and their handlers (the
// expectations among them) have heard of every remediation resource the
// NodeHealthCheck owns as the API server has it, and of the deletion of
// those it no longer has.
func (env *remediationEnv) waitToCatchUp(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, "the controller's informers to catch up with the API server", func() bool {
		stored := fw.GetNHC(t, name)
		cached, err := env.nhcLister.Get(name)
		if err != nil || cached.UID != stored.UID || cached.ResourceVersion != stored.ResourceVersion {
			return false
		}
		selector, err := metav1.LabelSelectorAsSelector(&stored.Spec.Selector)
		require.NoError(t, err)
		list, err := kubeClient.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: selector.String()})
		require.NoError(t, err)
		cachedNodes, err := env.nodeLister.List(selector)
		require.NoError(t, err)
		if !sameObjects(objectMetas(list.Items), cachedNodes) {
			return false
		}
		obs := env.readOnce(t, stored)
		if !obs.Ready {
			return false
		}
		var owned []metav1.ObjectMeta
		for _, gvr := range env.observer.Running() {
			list, err := dynamicClient.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			for _, r := range list.Items {
				if ownedBy(&r, stored.UID) {
					owned = append(owned, metav1.ObjectMeta{Name: r.GetName(), UID: r.GetUID(), ResourceVersion: r.GetResourceVersion()})
				}
			}
		}
		return env.heard.matches(stored.UID, owned)
	})
}

// sameObjects tells whether two lists hold the same objects, by UID and
// resourceVersion.
func sameObjects[T metav1.Object](want []metav1.ObjectMeta, got []T) bool {
	if len(want) != len(got) {
		return false
	}
	byUID := make(map[types.UID]string, len(want))
	for _, w := range want {
		byUID[w.UID] = w.ResourceVersion
	}
	for _, g := range got {
		if rv, ok := byUID[g.GetUID()]; !ok || rv != g.GetResourceVersion() {
			return false
		}
	}
	return true
}

func objectMetas(nodes []corev1.Node) []metav1.ObjectMeta {
	metas := make([]metav1.ObjectMeta, len(nodes))
	for i := range nodes {
		metas[i] = nodes[i].ObjectMeta
	}
	return metas
}

func ownedBy(r *unstructured.Unstructured, uid types.UID) bool {
	for _, owner := range r.GetOwnerReferences() {
		if owner.UID == uid {
			return true
		}
	}
	return false
}

// heardResources records the last change the remediation informers' change
// handlers heard of, per resource.
type heardResources struct {
	mu    sync.Mutex
	byUID map[types.UID]heardResource
}

type heardResource struct {
	owners          []types.UID
	resourceVersion string
	deleted         bool
}

// record hears of a change through a remediation.ResourceChangeFunc.
func (h *heardResources) record(_ schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	var owners []types.UID
	for _, owner := range obj.GetOwnerReferences() {
		owners = append(owners, owner.UID)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byUID[obj.GetUID()] = heardResource{owners: owners, resourceVersion: obj.GetResourceVersion(), deleted: deleted}
}

// matches tells whether the handlers heard of the resources an owner has,
// as the API server has them, and of the deletion of all others.
func (h *heardResources) matches(owner types.UID, stored []metav1.ObjectMeta) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	want := make(map[types.UID]bool, len(stored))
	for _, s := range stored {
		heard, ok := h.byUID[s.UID]
		if !ok || heard.deleted || heard.resourceVersion != s.ResourceVersion {
			return false
		}
		want[s.UID] = true
	}
	for uid, heard := range h.byUID {
		if !heard.deleted && !want[uid] && slices.Contains(heard.owners, owner) {
			return false
		}
	}
	return true
}

// synced is what a sync reads of a NodeHealthCheck's remediation
// resources, and the kinds Watch resolved for its writes.
type synced struct {
	gather.Seen
	watched *remediation.Watched
}

// read waits until the observer has synced the informers a NodeHealthCheck
// needs, and returns what it reads.
func (env *remediationEnv) read(t *testing.T, name string) synced {
	t.Helper()
	var obs synced
	framework.Eventually(t, 30*time.Second, "the remediation resources to be readable", func() bool {
		obs = env.readOnce(t, fw.GetNHC(t, name))
		return obs.Ready
	})
	return obs
}

// readOnce keeps a NodeHealthCheck's kinds watched and reads what the
// informers show now, as a sync does; the first also watches every
// NodeHealthCheck's kinds, and looks for remediations that outlived theirs.
func (env *remediationEnv) readOnce(t *testing.T, nhc *v1alpha1.NodeHealthCheck) synced {
	t.Helper()
	require.NoError(t, env.observer.WatchAll(env.ctx, func() ([]*v1alpha1.NodeHealthCheck, error) { return env.nhcLister.List(labels.Everything()) }))
	watched, err := env.observer.Watch(env.ctx, nhc, nil)
	require.NoError(t, err)
	seen, err := env.observer.Read(nhc, watched)
	require.NoError(t, err)
	return synced{Seen: seen, watched: watched}
}

func (env *remediationEnv) drainEvents() []string {
	var events []string
	for {
		select {
		case e := <-env.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// unhealthyNode creates a node of a scenario whose Ready condition has had
// a status for an hour.
func unhealthyNode(t *testing.T, scenario, name string, ready corev1.ConditionStatus) string {
	t.Helper()
	fw.CreateNode(t, scenario, name)
	fw.SetCondition(t, name, corev1.NodeReady, ready, time.Hour)
	return name
}

// selectedNodes lists the nodes a NodeHealthCheck selects, as the API
// server has them.
func selectedNodes(t *testing.T, nhc *v1alpha1.NodeHealthCheck) []*nodeview.Node {
	t.Helper()
	list, err := kubeClient.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: framework.ScenarioLabel + "=" + nhc.Name})
	require.NoError(t, err)
	nodes := make([]*nodeview.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = nodeview.Of(&list.Items[i], nil)
	}
	return nodes
}

// remediationsOf lists the TestRemediations of a node as the API server has
// them, whoever owns them.
func remediationsOf(t *testing.T, node string) []unstructured.Unstructured {
	t.Helper()
	list, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return framework.OfNode(list.Items, node)
}

// remediationNamed reads a TestRemediation as the API server has it.
func remediationNamed(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	r, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return r
}

// entryOf returns a node's entry in a NodeHealthCheck's status, or nil.
func entryOf(nhc *v1alpha1.NodeHealthCheck, node string) *v1alpha1.UnhealthyNode {
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && entry.Name == node {
			return entry
		}
	}
	return nil
}
