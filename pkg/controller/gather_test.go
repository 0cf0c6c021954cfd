package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather/listing"
	nhcfake "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/fake"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

const leaseNamespace = "medik8s-leases"

var snrTemplateResource = schema.GroupVersionResource{Group: snrResource.Group, Version: snrResource.Version, Resource: "selfnoderemediationtemplates"}

// oneCluster is one cluster's objects, to be read both ways.
type oneCluster struct {
	nodes  []*corev1.Node
	nhcs   []*v1alpha1.NodeHealthCheck
	dyn    []runtime.Object
	leases []runtime.Object
}

// A sync and kubectl nhc gather one input from one cluster: the sync from
// the controller's caches (the remediation informers, the node cache, the
// NodeHealthChecks' informer), kubectl nhc from the cluster listed once.
// The cluster has what each rule gathers: a node of the NodeHealthCheck
// under remediation, one of its resources whose node is gone, a
// control-plane node another one remediates, an older NodeHealthCheck that
// selects the same nodes and holds one by its record, and a node lease.
func TestTheSyncAndKubectlNhcGatherOneInput(t *testing.T) {
	now := t0.Add(time.Hour)
	workers := workersNHC()
	workers.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
	workers.Status.ObservedNodes = ptr.To[int32](3)
	workers.Status.RemediationHistory = []v1alpha1.RemediationRecord{{TargetKind: "Node", TargetName: "worker-gone", Started: metav1.NewTime(longAgo)}}
	older := selectingNHC("older", "worker")
	older.CreationTimestamp = metav1.NewTime(now.Add(-72 * time.Hour))
	older.Spec.PauseRequests = []string{"upgrade"}
	older.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-2", Remediations: []*v1alpha1.Remediation{{
		Resource: corev1.ObjectReference{APIVersion: snrTemplate.APIVersion, Kind: "SelfNodeRemediation", Namespace: "snr", Name: "worker-2"}, Started: metav1.NewTime(longAgo)}}}}
	controlPlanes := selectingNHC("control-planes", "control-plane")
	controlPlanes.CreationTimestamp = metav1.NewTime(now.Add(-24 * time.Hour))
	c := oneCluster{
		nodes: []*corev1.Node{testNode("worker-1", "worker", corev1.ConditionFalse), testNode("worker-2", "worker", corev1.ConditionTrue),
			testNode("worker-3", "worker", corev1.ConditionTrue), testNode("cp-0", "control-plane", corev1.ConditionFalse)},
		nhcs: []*v1alpha1.NodeHealthCheck{workers, older, controlPlanes},
		dyn:  []runtime.Object{snrTemplateObject(), snrOf(workers, "worker-1", false), snrOf(workers, "worker-gone", false), snrOf(controlPlanes, "cp-0", true)},
		leases: []runtime.Object{&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "node-worker-3", Namespace: leaseNamespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-maintenance"), LeaseDurationSeconds: ptr.To[int32](3600),
				AcquireTime: &metav1.MicroTime{Time: now.Add(-time.Minute)}, RenewTime: &metav1.MicroTime{Time: now.Add(-time.Minute)}},
		}},
	}

	synced := c.gatheredBySync(t, workers, now)
	listed := c.gatheredByListing(t, workers, now)

	assert.Equal(t, map[string]bool{"cp-0": true}, synced.BusyControlPlaneNodes)
	assert.Equal(t, map[string]bool{"worker-gone": true}, synced.DeletedNodes)
	assert.Len(t, synced.Claims["worker-2"], 1, "the older one selects it, and holds it by its record")
	assert.Contains(t, synced.Leases.ByNode, "worker-3")
	assert.Equal(t, inOneOrder(synced), inOneOrder(listed))
}

// gatheredBySync is what a sync of nhc gathers, once the remediation
// informers synced.
func (c oneCluster) gatheredBySync(t *testing.T, nhc *v1alpha1.NodeHealthCheck, now time.Time) health.Input {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := clocktesting.NewFakeClock(now)
	kube := kubefake.NewClientset(c.leases...)
	observer, writer, err := remediation.New(remediation.Config{Context: ctx, Dynamic: c.dynamic(), NodeClient: kube.CoreV1().Nodes(),
		Mapper: fixedMapper{snrMapper()}, Leases: listedLeases{kube}, Clock: clk})
	require.NoError(t, err)
	nodeInformer, err := nodecache.NewInformer(&rest.Config{Host: "https://nodes.invalid"}, 0)
	require.NoError(t, err)
	nhcClient := nhcfake.NewSimpleClientset()
	nhcInformer := externalversions.NewSharedInformerFactory(nhcClient, 0).Remediation().V1alpha1().NodeHealthChecks()
	ctrl, err := New(ctx, Config{Nodes: nodeInformer, NodeHealthChecks: nhcInformer, Client: nhcClient.RemediationV1alpha1(),
		Observer: observer, Changes: observer, Writer: writer, Recorder: record.NewFakeRecorder(100), Clock: clk})
	require.NoError(t, err)
	for _, n := range c.nhcs {
		require.NoError(t, nhcInformer.Informer().GetIndexer().Add(n))
	}
	for _, n := range c.nodes {
		cached := nodeview.Of(n, nil)
		require.NoError(t, nodeInformer.Informer().GetIndexer().Add(cached))
		ctrl.members.Update(cached.Name)
	}
	var g gather.Gathered
	require.Eventually(t, func() bool {
		src, err := ctrl.watch(ctx, nhc)
		require.NoError(t, err)
		g, err = gather.Gather(ctx, nhc, src, now)
		require.NoError(t, err)
		return !g.ResourcesUnknown && !g.Behind && g.ControlPlaneUnknown == ""
	}, 10*time.Second, 10*time.Millisecond, "the remediation informers sync")
	return g.Input
}

// gatheredByListing is what kubectl nhc gathers for nhc.
func (c oneCluster) gatheredByListing(t *testing.T, nhc *v1alpha1.NodeHealthCheck, now time.Time) health.Input {
	t.Helper()
	nodes := make([]*nodeview.Node, len(c.nodes))
	for i, n := range c.nodes {
		nodes[i] = nodeview.Of(n, nil)
	}
	clients := listing.Clients{Kube: kubefake.NewClientset(c.leases...), Dynamic: c.dynamic(), Mapper: snrMapper(), LeaseNamespace: leaseNamespace}
	cluster := listing.New(clients, c.nhcs, nodes, func(warning string) { t.Errorf("warned: %s", warning) })
	g, err := gather.Gather(context.Background(), nhc, cluster, now)
	require.NoError(t, err)
	return g.Input
}

func (c oneCluster) dynamic() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		snrResource: "SelfNodeRemediationList", snrTemplateResource: "SelfNodeRemediationTemplateList"}, c.dyn...)
}

// inOneOrder is an input in one order: the caches list nodes and claims
// in their own.
func inOneOrder(in health.Input) health.Input {
	in.Nodes = slices.Clone(in.Nodes)
	slices.SortFunc(in.Nodes, func(a, b *nodeview.Node) int { return strings.Compare(a.Name, b.Name) })
	for node, claims := range in.Claims {
		claims = slices.Clone(claims)
		slices.SortFunc(claims, func(a, b health.Claim) int { return strings.Compare(a.Name, b.Name) })
		in.Claims[node] = claims
	}
	return in
}

func testNode(name, role string, ready corev1.ConditionStatus) *corev1.Node {
	labels := map[string]string{"role": role}
	if role == "control-plane" {
		labels[v1alpha1.ControlPlaneRoleLabel] = ""
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Labels: labels},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(longAgo)}}},
	}
}

func snrTemplateObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snrTemplate.APIVersion, "kind": snrTemplate.Kind,
		"metadata": map[string]any{"name": snrTemplate.Name, "namespace": snrTemplate.Namespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot"}}},
	}}
}

// snrOf is a NodeHealthCheck's remediation resource of a node.
func snrOf(nhc *v1alpha1.NodeHealthCheck, node string, controlPlane bool) *unstructured.Unstructured {
	labels := map[string]any{v1alpha1.PartOfLabel: v1alpha1.PartOfValue}
	if controlPlane {
		labels[v1alpha1.ControlPlaneNodeLabel] = ""
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snrTemplate.APIVersion, "kind": "SelfNodeRemediation",
		"metadata": map[string]any{
			"name": node, "namespace": snrTemplate.Namespace, "uid": "uid-" + node, "labels": labels,
			"creationTimestamp": longAgo.UTC().Format(time.RFC3339),
			"annotations":       map[string]any{v1alpha1.NodeNameAnnotation: node, v1alpha1.TemplateNameAnnotation: snrTemplate.Name},
			"ownerReferences":   []any{map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "NodeHealthCheck", "name": nhc.Name, "uid": string(nhc.UID)}},
		},
	}}
}

func snrMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(snrResource.GroupVersion().WithKind("SelfNodeRemediation"), meta.RESTScopeNamespace)
	m.Add(snrResource.GroupVersion().WithKind(snrTemplate.Kind), meta.RESTScopeNamespace)
	return m
}

// fixedMapper is a mapper of kinds that never change.
type fixedMapper struct{ meta.RESTMapper }

func (fixedMapper) Reset() {}

// listedLeases reads the node leases as kubectl nhc does, at the default
// durations.
type listedLeases struct{ kube *kubefake.Clientset }

func (l listedLeases) Read() (*health.Leases, *health.Problem, error) {
	list, err := l.kube.CoordinationV1().Leases(leaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	all := make([]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return nodeleases.Of(all, health.DefaultLeaseDuration, health.DefaultLeaseBuffer), nil, nil
}
