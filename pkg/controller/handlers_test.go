package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhcfake "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/fake"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

var (
	snrTemplate = corev1.ObjectReference{APIVersion: "self-node-remediation.medik8s.io/v1alpha1", Kind: "SelfNodeRemediationTemplate", Namespace: "snr", Name: "automatic"}
	snrResource = schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediations"}
)

func selectingNHC(name, role string) *v1alpha1.NodeHealthCheck {
	return &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"role": role}},
			RemediationTemplate: ptr.To(snrTemplate),
		},
	}
}

// newTestController builds a controller on fake clients whose informers are
// not started: the tests seed the caches and call the handlers.
func newTestController(t testing.TB, nhcs ...*v1alpha1.NodeHealthCheck) *Controller {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := kubefake.NewClientset()
	nhcClient := nhcfake.NewSimpleClientset()
	nhcInformers := externalversions.NewSharedInformerFactory(nhcClient, 0)
	nhcInformer := nhcInformers.Remediation().V1alpha1().NodeHealthChecks()
	clk := clocktesting.NewFakeClock(t0.Time)
	dynamicClient := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	nodeInformer, err := nodecache.NewInformer(&rest.Config{Host: "https://nodes.invalid"}, 0)
	require.NoError(t, err)
	observer, writer, err := remediation.New(remediation.Config{Context: ctx, Dynamic: dynamicClient, NodeClient: kube.CoreV1().Nodes(), Clock: clk})
	require.NoError(t, err)
	c, err := New(ctx, Config{
		Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: nhcClient.RemediationV1alpha1(),
		Observer: observer, Changes: observer, Writer: writer,
		Recorder: record.NewFakeRecorder(100), Clock: clk,
	})
	require.NoError(t, err)
	for _, nhc := range nhcs {
		require.NoError(t, nhcInformer.Informer().GetIndexer().Add(nhc))
	}
	return c
}

// queued drains the queue and returns the names in it, sorted.
func queued(c *Controller) []string {
	var names []string
	for c.queue.Len() > 0 {
		name, _ := c.queue.Get()
		names = append(names, name)
		c.queue.Done(name)
		c.queue.Forget(name)
	}
	slices.Sort(names)
	return names
}

func nodeWithRole(role string) *corev1.Node {
	n := baseNode()
	n.Labels["role"] = role
	return n
}

func TestNodeEventsEnqueueTheSelectingNodeHealthChecks(t *testing.T) {
	cases := []struct {
		name    string
		old     *corev1.Node
		change  func(*corev1.Node)
		want    []string
		deleted bool
	}{
		{"a heartbeat wakes nobody", nodeWithRole("worker"), func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, nil, false},
		{"a condition change wakes the selecting one", nodeWithRole("worker"), func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, []string{"workers"}, false},
		{"leaving a selector wakes the one that lost the node and the one that gained it", nodeWithRole("worker"), func(n *corev1.Node) { n.Labels["role"] = "infra" }, []string{"infra", "workers"}, false},
		{"the confirmation annotation wakes the selecting one", nodeWithRole("infra"), func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}
		}, []string{"infra"}, false},
		{"a deletion wakes the one that selected it", nodeWithRole("worker"), nil, []string{"workers"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t, selectingNHC("workers", "worker"), selectingNHC("infra", "infra"))
			switch {
			case tc.deleted:
				c.handlers.deleteNode(klog.Background(), nodeview.Of(tc.old, nil))
			default:
				updated := tc.old.DeepCopy()
				updated.ResourceVersion = "2"
				tc.change(updated)
				c.handlers.updateNode(klog.Background(), nodeview.Of(tc.old, nil), nodeview.Of(updated, nil))
			}
			assert.Equal(t, tc.want, queued(c))
		})
	}
}

func TestNodeHealthCheckEventsEnqueueSpecChangesOnly(t *testing.T) {
	c := newTestController(t)
	nhc := selectingNHC("workers", "worker")
	c.handlers.addNHC(klog.Background(), nhc)
	assert.Equal(t, []string{"workers"}, queued(c))

	statusOnly := nhc.DeepCopy()
	statusOnly.Status.Phase = v1alpha1.PhaseRemediating
	c.handlers.updateNHC(klog.Background(), nhc, statusOnly)
	assert.Empty(t, queued(c), "status writes, ours included, need no sync")

	specChange := nhc.DeepCopy()
	specChange.Generation = 2
	c.handlers.updateNHC(klog.Background(), nhc, specChange)
	assert.Equal(t, []string{"workers"}, queued(c))

	c.handlers.deleteNHC(klog.Background(), nhc)
	assert.Equal(t, []string{"workers"}, queued(c))
}

// A NodeHealthCheck deleted and created again under its name while the
// watch missed both reaches the handlers as an update from the old object
// to the new one, both at generation 1. It is a new object, which may
// select other nodes: it and every other NodeHealthCheck are enqueued, as
// for an add.
func TestANodeHealthCheckCreatedAgainUnderItsNameIsSynced(t *testing.T) {
	c := newTestController(t, selectingNHC("workers", "worker"), selectingNHC("infra", "infra"))
	old := selectingNHC("workers", "worker")
	old.UID, old.Generation = "old", 1
	again := selectingNHC("workers", "infra")
	again.UID, again.Generation = "new", 1
	c.handlers.updateNHC(klog.Background(), old, again)
	assert.Equal(t, []string{"infra", "workers"}, queued(c))
}

func TestRemediatorEventsEnqueueOwnersAndTemplateUsers(t *testing.T) {
	c := newTestController(t, selectingNHC("workers", "worker"), selectingNHC("infra", "infra"))
	owned := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "self-node-remediation.medik8s.io/v1alpha1", "kind": "SelfNodeRemediation"}}
	owned.SetName("worker-1")
	owned.SetNamespace("snr")
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "remediation.medik8s.io/v1alpha1", Kind: "NodeHealthCheck", Name: "infra", UID: "x"}})
	c.handlers.remediationChanged(klog.Background(), snrResource, owned, false, nil)
	assert.Equal(t, []string{"infra"}, queued(c), "a remediation resource wakes its owner")
	c.handlers.remediationChanged(klog.Background(), snrResource, owned, false, []string{"infra"})
	assert.Empty(t, queued(c), "but not when it confirms the owner's own create: that sync recorded it")

	template := &unstructured.Unstructured{Object: map[string]any{"apiVersion": snrTemplate.APIVersion, "kind": snrTemplate.Kind}}
	template.SetName(snrTemplate.Name)
	template.SetNamespace(snrTemplate.Namespace)
	c.handlers.remediationChanged(klog.Background(), schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediationtemplates"}, template, true, nil)
	assert.Equal(t, []string{"infra", "workers"}, queued(c), "a template wakes every NodeHealthCheck that references it")

	other := template.DeepCopy()
	other.SetName("manual")
	c.handlers.remediationChanged(klog.Background(), schema.GroupVersionResource{Group: "self-node-remediation.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediationtemplates"}, other, false, nil)
	assert.Empty(t, queued(c), "another template wakes nobody")
}

// A cluster-scoped template has no namespace, while the reference to it has
// one (the spec requires it): its change still wakes the NodeHealthChecks
// that reference it, and no others.
func TestAClusterScopedTemplateWakesTheNodeHealthChecksThatReferenceIt(t *testing.T) {
	fence := corev1.ObjectReference{APIVersion: "fence-agents-remediation.medik8s.io/v1alpha1", Kind: "FenceAgentsRemediationTemplate", Namespace: "openshift-workload-availability", Name: "fence"}
	fencing := selectingNHC("fencing", "worker")
	fencing.Spec.RemediationTemplate = ptr.To(fence)
	c := newTestController(t, fencing, selectingNHC("workers", "worker"))
	template := &unstructured.Unstructured{Object: map[string]any{"apiVersion": fence.APIVersion, "kind": fence.Kind}}
	template.SetName(fence.Name)
	resource := schema.GroupVersionResource{Group: "fence-agents-remediation.medik8s.io", Version: "v1alpha1", Resource: "fenceagentsremediationtemplates"}
	c.handlers.remediationChanged(klog.Background(), resource, template, false, nil)
	assert.Equal(t, []string{"fencing"}, queued(c))
}

func TestARemediationResourceWakesTheNodeHealthChecksItHeldBack(t *testing.T) {
	c := newTestController(t, selectingNHC("workers", "worker"), selectingNHC("infra", "infra"))
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c.handlers.nodes = nodecache.NewLister(nodes)
	worker := nodeWithRole("worker")
	worker.Name = "worker-1"
	require.NoError(t, nodes.Add(nodeview.Of(worker, nil)))

	// Someone else's resource for worker-1 goes: "workers" may remediate it now.
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "self-node-remediation.medik8s.io/v1alpha1", "kind": "SelfNodeRemediation"}}
	theirs.SetName("worker-1")
	theirs.SetNamespace("snr")
	c.handlers.remediationChanged(klog.Background(), snrResource, theirs, true, nil)
	assert.Equal(t, []string{"workers"}, queued(c), "the NodeHealthCheck that selects its node")

	// A node lease: its holders and the NodeHealthChecks that select the
	// node, but not the one this process took it for.
	c.handlers.leaseChanged(klog.Background(), "worker-1", false, []string{"NodeHealthCheck-infra"})
	assert.Equal(t, []string{"infra", "workers"}, queued(c), "a lease someone took wakes its holder and those that select the node")
	c.handlers.leaseChanged(klog.Background(), "worker-1", true, []string{"NodeHealthCheck-workers"})
	assert.Empty(t, queued(c), "a lease this process took for workers: its sync records the outcome")
	c.handlers.leaseChanged(klog.Background(), "worker-1", true, []string{"NodeHealthCheck-infra", "NodeHealthCheck-workers"})
	assert.Equal(t, []string{"infra"}, queued(c), "taken over from infra: infra hears of it")

	// A control-plane remediation going frees every control-plane node.
	controlPlane := theirs.DeepCopy()
	controlPlane.SetName("master-0")
	controlPlane.SetLabels(map[string]string{v1alpha1.ControlPlaneNodeLabel: ""})
	c.handlers.remediationChanged(klog.Background(), snrResource, controlPlane, true, nil)
	assert.Equal(t, []string{"infra", "workers"}, queued(c))
	c.handlers.remediationChanged(klog.Background(), snrResource, controlPlane, false, []string{"workers"})
	assert.Equal(t, []string{"infra"}, queued(c), "a control-plane remediation workers created itself wakes the others")
}

// A NodeHealthCheck whose status holds a shared node (a step under way)
// keeps it from the others; the status write that lets it go (the node
// recovered) wakes those that select the node too, which may take it over,
// instead of leaving them to their next requeue. Other status writes wake
// nobody.
func TestAStatusThatLetsGoOfASharedNodeWakesTheOthers(t *testing.T) {
	holding, other := selectingNHC("young", "worker"), selectingNHC("old", "worker")
	holding.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-1", Remediations: []*v1alpha1.Remediation{{Started: metav1.Now()}}}}
	c := newTestController(t, holding, other, selectingNHC("infra", "infra"))
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c.handlers.nodes = nodecache.NewLister(nodes)
	worker := nodeWithRole("worker")
	require.NoError(t, nodes.Add(nodeview.Of(worker, nil)))

	counted := holding.DeepCopy()
	counted.Status.ObservedNodes = ptr.To[int32](2)
	c.handlers.updateNHC(klog.Background(), holding, counted)
	assert.Empty(t, queued(c), "still held")

	recovered := holding.DeepCopy()
	recovered.Status.UnhealthyNodes[0].ConditionsHealthyTimestamp = ptr.To(metav1.Now())
	c.handlers.updateNHC(klog.Background(), holding, recovered)
	assert.Equal(t, []string{"old"}, queued(c), "the node is let go")

	gone := holding.DeepCopy()
	gone.Status.UnhealthyNodes = nil
	c.handlers.updateNHC(klog.Background(), holding, gone)
	assert.Equal(t, []string{"old"}, queued(c), "the entry is gone")

	// Relabelled, the node is no longer the holder's: the one that selects
	// it now wakes, though the two selectors share no node.
	relabelled := nodeWithRole("infra")
	require.NoError(t, nodes.Update(nodeview.Of(relabelled, nil)))
	c.handlers.updateNHC(klog.Background(), holding, gone)
	assert.Equal(t, []string{"infra"}, queued(c), "the one that selects the node now")
}

// A NodeHealthCheck that cannot act (disabled: its kind is no longer
// served) records a control-plane node's remediation: while the kind cannot
// be read, that record keeps every control-plane node waiting. The status
// write that drops it wakes every other NodeHealthCheck, those that select
// other control-plane nodes alone included.
func TestAStatusThatDropsARecordedControlPlaneRemediationWakesEveryOther(t *testing.T) {
	disabled := selectingNHC("gamma", "master")
	disabled.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDisabled, Status: metav1.ConditionTrue}}
	disabled.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "master-1", Remediations: []*v1alpha1.Remediation{{Started: metav1.Now()}}}}
	c := newTestController(t, disabled, selectingNHC("masters", "master"), selectingNHC("workers", "worker"))
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	c.handlers.nodes = nodecache.NewLister(nodes)
	master := nodeWithRole("master")
	master.Name = "master-1"
	master.Labels[v1alpha1.ControlPlaneRoleLabel] = ""
	require.NoError(t, nodes.Add(nodeview.Of(master, nil)))

	dropped := disabled.DeepCopy()
	dropped.Status.UnhealthyNodes[0].Remediations = nil
	c.handlers.updateNHC(klog.Background(), disabled, dropped)
	assert.Equal(t, []string{"masters", "workers"}, queued(c), "a control-plane node let go of wakes every other NodeHealthCheck")

	master.Labels = map[string]string{"role": "master"}
	require.NoError(t, nodes.Update(nodeview.Of(master, nil)))
	c.handlers.updateNHC(klog.Background(), disabled, dropped)
	assert.Equal(t, []string{"masters"}, queued(c), "a worker let go of wakes those that select it")
}
