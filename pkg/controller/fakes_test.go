package controller

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	nhcfake "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/fake"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// createdRef is the resource the fake creates for a creation.
func createdRef(c health.Creation) corev1.ObjectReference {
	kind := health.RemediationKind(c.Template.Kind)
	return corev1.ObjectReference{APIVersion: c.Template.APIVersion, Kind: kind, Namespace: c.Template.Namespace,
		Name: c.Node, UID: types.UID(strings.ToLower(kind) + "-" + c.Node)}
}

// fakeStatuses is a statusWriter that records the statuses written and bumps
// the resourceVersion, as the API server does.
type fakeStatuses struct {
	err     error
	written []*v1alpha1.NodeHealthCheck
	// patched are the statuses merged into objects that cannot be decoded.
	patched []v1alpha1.NodeHealthCheckStatus
}

func (f *fakeStatuses) PatchStatus(_ context.Context, _, _ string, status v1alpha1.NodeHealthCheckStatus) error {
	if f.err != nil {
		return f.err
	}
	f.patched = append(f.patched, status)
	return nil
}

func (f *fakeStatuses) UpdateStatus(_ context.Context, nhc *v1alpha1.NodeHealthCheck) (*v1alpha1.NodeHealthCheck, error) {
	if f.err != nil {
		return nil, f.err
	}
	rv, _ := strconv.Atoi(nhc.ResourceVersion)
	written := nhc.DeepCopy()
	written.ResourceVersion = strconv.Itoa(rv + 1)
	f.written = append(f.written, written)
	return written.DeepCopy(), nil
}

// fakeLiveNodes is the API server's nodes: those of the cache, unless
// versions or live say otherwise.
type fakeLiveNodes struct {
	nodes cache.Indexer
	// versions, when set, are the nodes the API server has.
	versions map[string]string
	lists    int
	// live, when set, are the nodes the API server has, for Node; err
	// fails each read.
	live map[string]*corev1.Node
	err  error
	// reads counts the reads of Node, which a sync's creates make in
	// parallel.
	reads   int
	readsMu sync.Mutex
	// notOlderThan is what each read of Node asked for, in order.
	notOlderThan []string
	// initialList is the resourceVersion of the list the node cache
	// started from; "" for unknown.
	initialList string
	// onRead, when set, is called as each read of Node starts.
	onRead func()
}

// fakeRevision is the resourceVersion of every read of fakeLiveNodes.
const fakeRevision = "77"

func (f *fakeLiveNodes) Node(_ context.Context, name, notOlderThan string) (*nodeview.Node, string, error) {
	f.readsMu.Lock()
	f.reads++
	f.notOlderThan = append(f.notOlderThan, notOlderThan)
	f.readsMu.Unlock()
	if f.onRead != nil {
		f.onRead()
	}
	if f.err != nil {
		return nil, "", f.err
	}
	if f.live != nil {
		if node, ok := f.live[name]; ok {
			return nodeview.Of(node, nil), fakeRevision, nil
		}
		return nil, fakeRevision, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	obj, ok, _ := f.nodes.GetByKey(name)
	if !ok {
		return nil, fakeRevision, apierrors.NewNotFound(corev1.Resource("nodes"), name)
	}
	return obj.(*nodeview.Node), fakeRevision, nil
}

func (f *fakeLiveNodes) Versions(_ context.Context, selector labels.Selector) (map[string]string, error) {
	f.lists++
	if f.versions != nil {
		return maps.Clone(f.versions), nil
	}
	versions := map[string]string{}
	for _, obj := range f.nodes.List() {
		if node := obj.(*nodeview.Node); selector.Matches(node.Labels) {
			versions[node.Name] = node.ResourceVersion
		}
	}
	return versions, nil
}

// fakeLiveNHCs is the API server's NodeHealthChecks: those of the cache,
// or as statuses last wrote them where the cache is older, unless live
// says otherwise.
type fakeLiveNHCs struct {
	nhcs     cache.Indexer
	statuses *fakeStatuses
	// live, when set, are the NodeHealthChecks the API server has.
	live  map[string]*v1alpha1.NodeHealthCheck
	reads int
	// gets counts the reads of whole NodeHealthChecks.
	gets int
	// answerAfter, when set, holds each read's answer until it is closed,
	// as a slow API server would, or fails the read after a while.
	answerAfter <-chan struct{}
}

func (f *fakeLiveNHCs) Metadata(_ context.Context, name string) (*metav1.ObjectMeta, error) {
	f.reads++
	if f.answerAfter != nil {
		select {
		case <-f.answerAfter:
		case <-time.After(5 * time.Second):
			return nil, apierrors.NewTimeoutError("no answer", 1)
		}
	}
	nhc, err := f.current(name)
	if err != nil {
		return nil, err
	}
	return nhc.ObjectMeta.DeepCopy(), nil
}

func (f *fakeLiveNHCs) Get(_ context.Context, name string) (*v1alpha1.NodeHealthCheck, error) {
	f.gets++
	nhc, err := f.current(name)
	if err != nil {
		return nil, err
	}
	return nhc.DeepCopy(), nil
}

func (f *fakeLiveNHCs) current(name string) (*v1alpha1.NodeHealthCheck, error) {
	if f.live != nil {
		if nhc, ok := f.live[name]; ok {
			return nhc, nil
		}
		return nil, apierrors.NewNotFound(v1alpha1.Resource("nodehealthchecks"), name)
	}
	obj, ok, _ := f.nhcs.GetByKey(name)
	if !ok {
		return nil, apierrors.NewNotFound(v1alpha1.Resource("nodehealthchecks"), name)
	}
	cached := obj.(*v1alpha1.NodeHealthCheck)
	if f.statuses != nil {
		for i := len(f.statuses.written) - 1; i >= 0; i-- {
			if written := f.statuses.written[i]; written.Name == name && written.UID == cached.UID {
				if order, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && order < 0 {
					return written, nil
				}
				break
			}
		}
	}
	return cached, nil
}

// syncFixture is a Controller on fakes and a fake clock, with no API server.
type syncFixture struct {
	c            *Controller
	nhcs, nodes  cache.Indexer
	liveNodes    *fakeLiveNodes
	liveNHCs     *fakeLiveNHCs
	remediations *fakeRemediations
	statuses     *fakeStatuses
	recorder     *record.FakeRecorder
	clock        *clocktesting.FakeClock
	metrics      *Metrics
}

func newSyncFixture(t testing.TB, nhc *v1alpha1.NodeHealthCheck, nodes ...*corev1.Node) *syncFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &syncFixture{
		statuses: &fakeStatuses{},
		recorder: record.NewFakeRecorder(1000),
		clock:    clocktesting.NewFakeClock(t0.Time),
		metrics:  NewMetrics(),
	}
	f.remediations = &fakeRemediations{clock: f.clock, seen: gather.Seen{
		Ready: true, Remediations: map[string][]health.Remediation{},
	}}
	// The production informers, never started: the tests fill their caches.
	nodeInformer, err := nodecache.NewInformer(&rest.Config{Host: "https://nodes.invalid"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	nhcClient := nhcfake.NewSimpleClientset()
	nhcInformer := externalversions.NewSharedInformerFactory(nhcClient, 0).Remediation().V1alpha1().NodeHealthChecks()
	f.nodes, f.nhcs = nodeInformer.Informer().GetIndexer(), nhcInformer.Informer().GetIndexer()
	f.liveNodes = &fakeLiveNodes{nodes: f.nodes}
	f.c, err = New(ctx, Config{
		Nodes: fakedNodeReads{informerOfNodes: nodeInformer, live: f.liveNodes}, NodeHealthChecks: nhcInformer, Client: nhcClient.RemediationV1alpha1(),
		Observer: f.remediations, Changes: f.remediations, Writer: f.remediations,
		Recorder: f.recorder, Metrics: f.metrics, Clock: f.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.c.queue.ShutDown)
	// As cronjob's tests replace its job control: the status writes are
	// recorded instead of sent.
	f.c.api.statuses = f.statuses
	f.liveNHCs = &fakeLiveNHCs{nhcs: f.nhcs, statuses: f.statuses}
	f.c.api.liveNHCs = f.liveNHCs
	if nhc != nil {
		f.setNHC(t, nhc)
	}
	for _, node := range nodes {
		f.setNode(t, node)
	}
	return f
}

// fakedNodeReads is the node informer with its reads at the API server
// faked.
type fakedNodeReads struct {
	*informerOfNodes
	live *fakeLiveNodes
}

// informerOfNodes is embedded under this name, so that the field does not
// hide the informer's Informer method.
type informerOfNodes = nodecache.Informer

func (n fakedNodeReads) Versions(ctx context.Context, selector labels.Selector) (map[string]string, error) {
	return n.live.Versions(ctx, selector)
}

func (n fakedNodeReads) Node(ctx context.Context, name, notOlderThan string) (*nodeview.Node, string, error) {
	return n.live.Node(ctx, name, notOlderThan)
}

func (n fakedNodeReads) InitialListVersion() string { return n.live.initialList }

func (f *syncFixture) setNHC(t testing.TB, nhc *v1alpha1.NodeHealthCheck) {
	t.Helper()
	if err := f.nhcs.Update(nhc); err != nil {
		t.Fatal(err)
	}
}

// setNode puts the node in the cache as the informer keeps it.
func (f *syncFixture) setNode(t testing.TB, node *corev1.Node) {
	t.Helper()
	cached := nodeview.Of(node, nil)
	if err := f.nodes.Update(cached); err != nil {
		t.Fatal(err)
	}
	// As the node handlers do.
	f.c.members.Update(cached.Name)
}

// takeLeases makes the controller take node leases, with beforeAcquire
// run before each: the cluster changing while a sync takes them.
func (f *syncFixture) takeLeases(beforeAcquire func()) *fakeLeases {
	leases := &fakeLeases{beforeAcquire: beforeAcquire}
	f.c.api.leases = leases
	f.remediations.seen.Leases = &health.Leases{ByNode: map[string]health.NodeLease{}, Duration: time.Hour}
	return leases
}

// guardWrites bounds the controller's writes, as leader election does.
func (f *syncFixture) guardWrites(writesUntil func() (time.Time, error)) {
	f.c.api.writesUntil = writesUntil
}

func (f *syncFixture) sync() (time.Duration, error) {
	return f.c.Sync(context.Background(), "workers")
}

// lastStatus is the status written last; it fails the test when none was.
func (f *syncFixture) lastStatus(t *testing.T) v1alpha1.NodeHealthCheckStatus {
	t.Helper()
	if len(f.statuses.written) == 0 {
		t.Fatal("no status was written")
	}
	return f.statuses.written[len(f.statuses.written)-1].Status
}

// events drains the events recorded so far, as "Type Reason Message".
func (f *syncFixture) events() []string {
	var events []string
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// withReason keeps the events of one reason.
func withReason(events []string, reason string) []string {
	var kept []string
	for _, e := range events {
		if strings.Fields(e)[1] == reason {
			kept = append(kept, e)
		}
	}
	return kept
}

// workersNHC selects role=worker nodes with what the CRD would default:
// Ready=False for 300s, minHealthy 0.
func workersNHC() *v1alpha1.NodeHealthCheck {
	nhc := selectingNHC("workers", "worker")
	nhc.ResourceVersion = "1"
	nhc.Spec.MinHealthy = ptr.To(intstr.FromInt32(0))
	nhc.Spec.UnhealthyConditions = []v1alpha1.UnhealthyCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 300 * time.Second}},
	}
	return nhc
}

// notReady is a worker node whose Ready condition went False at since.
func notReady(name string, since time.Time) *corev1.Node {
	n := baseNode()
	n.Name = name
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(since)
	return n
}

func healthyNode(name string) *corev1.Node {
	n := baseNode()
	n.Name = name
	return n
}

// entryOf is the status entry of a node, or nil.
func entryOf(status v1alpha1.NodeHealthCheckStatus, node string) *v1alpha1.UnhealthyNode {
	for _, e := range status.UnhealthyNodes {
		if e.Name == node {
			return e
		}
	}
	return nil
}
