package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

const remediatorNamespace = "remediators"

var (
	templateGVR    = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediationtemplates"}
	remediationGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}
)

// remediationEnv is pkg/remediation wired to the real API server, as the
// controller wires it.
type remediationEnv struct {
	manager   *remediation.Manager
	informers *remediation.Informers
	// mapperClock drives the throttle of API rediscovery.
	mapperClock *clocktesting.FakePassiveClock
}

func newRemediationEnv(t *testing.T) *remediationEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)))
	expectations := remediation.NewExpectations(clock.RealClock{})
	informers := remediation.NewInformers(ctx, dynamicClient, expectations.Observe)
	env := &remediationEnv{informers: informers, mapperClock: clocktesting.NewFakePassiveClock(time.Now())}
	templates := remediation.NewTemplates(mapper, informers, env.mapperClock)
	env.manager = remediation.NewManager(informers, templates, expectations, remediation.NewWriter(dynamicClient, kubeClient), clock.RealClock{})
	ensureNamespace(t, remediatorNamespace)
	return env
}

// observe waits until the manager is ready to evaluate the NodeHealthCheck.
func (env *remediationEnv) observe(t *testing.T, nhc *v1alpha1.NodeHealthCheck) remediation.Observation {
	t.Helper()
	var obs remediation.Observation
	eventually(t, "the observation to be ready", func() bool {
		var err error
		obs, err = env.manager.Observe(nhc)
		require.NoError(t, err)
		return obs.Ready
	})
	return obs
}

// decide observes, evaluates at now, and applies the decision.
func (env *remediationEnv) decide(t *testing.T, nhc *v1alpha1.NodeHealthCheck, now time.Time) (health.Decision, remediation.Outcome) {
	t.Helper()
	nhc = refreshNHC(t, nhc)
	obs := env.observe(t, nhc)
	d := health.Evaluate(health.Input{
		NHC: nhc, Nodes: selectedNodes(t, nhc), Remediations: obs.Remediations,
		BusyControlPlaneNodes: obs.BusyControlPlaneNodes, Problem: obs.Problem, Now: now,
	})
	out := env.manager.Apply(context.Background(), nhc, &d, &obs)
	require.Empty(t, out.Errors)
	nhc.Status = d.Status
	_, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().UpdateStatus(context.Background(), nhc, metav1.UpdateOptions{})
	require.NoError(t, err)
	return d, out
}

func eventually(t *testing.T, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	require.NoError(t, err, "waiting for %s", what)
}

func ensureNamespace(t *testing.T, name string) {
	_, err := kubeClient.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// createNode creates a node labelled for a test, with a Ready condition that
// changed `ago` before now.
func createNode(t *testing.T, name, testLabel string, ready corev1.ConditionStatus, ago time.Duration, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": testLabel}}}
	for k, v := range labels {
		node.Labels[k] = v
	}
	created, err := kubeClient.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kubeClient.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return setReady(t, created, ready, ago)
}

func setReady(t *testing.T, node *corev1.Node, ready corev1.ConditionStatus, ago time.Duration) *corev1.Node {
	t.Helper()
	node = node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: ready, Reason: "Test",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-ago)), LastHeartbeatTime: metav1.Now(),
	}}
	updated, err := kubeClient.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
	require.NoError(t, err)
	return updated
}

// createTemplate creates a TestRemediationTemplate with a spec.template.spec.
func createTemplate(t *testing.T, name string, annotations map[string]string) *unstructured.Unstructured {
	t.Helper()
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": name, "namespace": remediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot", "size": "foo"}}},
	}}
	tmpl.SetAnnotations(annotations)
	created, err := dynamicClient.Resource(templateGVR).Namespace(remediatorNamespace).Create(context.Background(), tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dynamicClient.Resource(templateGVR).Namespace(remediatorNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return created
}

func templateRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Namespace: remediatorNamespace, Name: name}
}

// createRemediationNHC creates a NodeHealthCheck selecting the nodes labelled
// test=<name>, with minHealthy 0 and the given spec changes.
func createRemediationNHC(t *testing.T, name string, change func(*v1alpha1.NodeHealthCheckSpec)) *v1alpha1.NodeHealthCheck {
	t.Helper()
	nhc := &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector:   metav1.LabelSelector{MatchLabels: map[string]string{"test": name}},
			MinHealthy: ptr.To(intstr.FromInt32(0)),
		},
	}
	change(&nhc.Spec)
	created, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().Create(context.Background(), nhc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = nhcClient.RemediationV1alpha1().NodeHealthChecks().Delete(context.Background(), name, metav1.DeleteOptions{})
		deleteAllRemediations(name)
	})
	return created
}

func refreshNHC(t *testing.T, nhc *v1alpha1.NodeHealthCheck) *v1alpha1.NodeHealthCheck {
	t.Helper()
	fresh, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().Get(context.Background(), nhc.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return fresh
}

func selectedNodes(t *testing.T, nhc *v1alpha1.NodeHealthCheck) []*corev1.Node {
	t.Helper()
	list, err := kubeClient.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "test=" + nhc.Name})
	require.NoError(t, err)
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return nodes
}

// remediationsOf lists the TestRemediations of a node, as the API server has them.
func remediationsOf(t *testing.T, node string) []unstructured.Unstructured {
	t.Helper()
	list, err := dynamicClient.Resource(remediationGVR).Namespace(remediatorNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var found []unstructured.Unstructured
	for _, r := range list.Items {
		if remediation.NodeOf(&r) == node {
			found = append(found, r)
		}
	}
	return found
}

// deleteAllRemediations removes the test's resources; no garbage collector runs.
func deleteAllRemediations(nhcName string) {
	ctx := context.Background()
	list, err := dynamicClient.Resource(remediationGVR).Namespace(remediatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, r := range list.Items {
		if strings.HasPrefix(remediation.NodeOf(&r), nhcName) {
			r.SetFinalizers(nil)
			_, _ = dynamicClient.Resource(remediationGVR).Namespace(remediatorNamespace).Update(ctx, &r, metav1.UpdateOptions{})
			_ = dynamicClient.Resource(remediationGVR).Namespace(remediatorNamespace).Delete(ctx, r.GetName(), metav1.DeleteOptions{})
		}
	}
}

// setRemediationCondition sets a condition in a remediation resource's
// status, as a remediator does.
func setRemediationCondition(t *testing.T, r *unstructured.Unstructured, conditionType, status string) {
	t.Helper()
	fresh, err := dynamicClient.Resource(remediationGVR).Namespace(r.GetNamespace()).Get(context.Background(), r.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	conditions, _, _ := unstructured.NestedSlice(fresh.Object, "status", "conditions")
	conditions = append(conditions, map[string]any{
		"type": conditionType, "status": status, "reason": "Test", "message": "set by the test",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	})
	require.NoError(t, unstructured.SetNestedSlice(fresh.Object, conditions, "status", "conditions"))
	_, err = dynamicClient.Resource(remediationGVR).Namespace(r.GetNamespace()).UpdateStatus(context.Background(), fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
}
