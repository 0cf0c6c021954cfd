package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

var (
	// TemplateResource is the test remediator's template kind.
	TemplateResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediationtemplates"}
	// RemediationResource is the test remediator's remediation kind.
	RemediationResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}
)

// ScenarioLabel marks the nodes of one scenario; its NodeHealthCheck selects them.
const ScenarioLabel = "e2e.nhc/scenario"

// Eventually polls until condition holds, for at most timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	require.NoError(t, err, "waiting %v for %s", timeout, what)
}

// Consistently checks that condition holds throughout a duration.
func Consistently(t testing.TB, duration time.Duration, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		require.True(t, condition(), "expected %s throughout %v", what, duration)
		time.Sleep(100 * time.Millisecond)
	}
}

// NodeOption changes a node before it is created.
type NodeOption func(*corev1.Node)

// WithLabel labels a node.
func WithLabel(key, value string) NodeOption {
	return func(n *corev1.Node) { n.Labels[key] = value }
}

// ControlPlane labels a node as a control-plane node.
var ControlPlane = WithLabel(v1alpha1.ControlPlaneRoleLabel, "")

// CreateNode creates a node of a scenario that is Ready since an hour ago.
func (e *Env) CreateNode(t testing.TB, scenario, name string, opts ...NodeOption) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ScenarioLabel: scenario}}}
	for _, opt := range opts {
		opt(node)
	}
	_, err := e.Kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return e.SetCondition(t, name, corev1.NodeReady, corev1.ConditionTrue, time.Hour)
}

// CreateNodes creates count nodes named <scenario>-<i>.
func (e *Env) CreateNodes(t testing.TB, scenario string, count int, opts ...NodeOption) []string {
	t.Helper()
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", scenario, i)
		e.CreateNode(t, scenario, names[i], opts...)
	}
	return names
}

// SetCondition sets a node condition as a kubelet (or node-problem-detector)
// would, as changed `ago` before now.
func (e *Env) SetCondition(t testing.TB, node string, conditionType corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) *corev1.Node {
	t.Helper()
	var updated *corev1.Node
	err := retryOnConflict(func() error {
		n, err := e.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := corev1.NodeCondition{Type: conditionType, Status: status, Reason: "E2E", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-ago))}
		replaced := false
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == conditionType {
				n.Status.Conditions[i], replaced = c, true
			}
		}
		if !replaced {
			n.Status.Conditions = append(n.Status.Conditions, c)
		}
		updated, err = e.Kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
	return updated
}

// Fail makes nodes Ready=False as of `ago`.
func (e *Env) Fail(t testing.TB, ago time.Duration, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		e.SetCondition(t, n, corev1.NodeReady, corev1.ConditionFalse, ago)
	}
}

// Recover makes nodes Ready=True as of now.
func (e *Env) Recover(t testing.TB, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		e.SetCondition(t, n, corev1.NodeReady, corev1.ConditionTrue, 0)
	}
}

// Heartbeat writes the nodes' status as a kubelet does when nothing
// changed: every condition's heartbeat time is now, and nothing else moves.
func (e *Env) Heartbeat(t testing.TB, nodes ...string) {
	t.Helper()
	for _, node := range nodes {
		require.NoError(t, retryOnConflict(func() error {
			n, err := e.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
			}
			_, err = e.Kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
			return err
		}))
	}
}

// WaitForTheCacheToShow waits until the controller's node cache shows a
// scenario's nodes, count of them: a NodeHealthCheck of them that never
// acts (its condition is never set) counts them in its status.
func (e *Env) WaitForTheCacheToShow(t testing.TB, scenario string, count int32) {
	t.Helper()
	probe := scenario + "-probe"
	e.CreateTemplate(t, probe, nil)
	e.CreateNHC(t, probe, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{ScenarioLabel: scenario}}
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{{Type: "NeverSet", Status: "True", Duration: metav1.Duration{Duration: time.Hour}}}
	})
	Eventually(t, 10*time.Second, fmt.Sprintf("the cache to show %d nodes", count), func() bool {
		s := e.GetNHC(t, probe).Status
		return s.ObservedNodes != nil && *s.ObservedNodes == count
	})
}

// UpdateNode changes a node's metadata.
func (e *Env) UpdateNode(t testing.TB, node string, change func(*corev1.Node)) {
	t.Helper()
	require.NoError(t, retryOnConflict(func() error {
		n, err := e.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(n)
		_, err = e.Kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	}))
}

// CreateTemplate creates a TestRemediationTemplate.
func (e *Env) CreateTemplate(t testing.TB, name string, annotations map[string]string) {
	t.Helper()
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": name, "namespace": RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot", "size": "foo"}}},
	}}
	tmpl.SetAnnotations(annotations)
	_, err := e.Dynamic.Resource(TemplateResource).Namespace(RemediatorNamespace).Create(context.Background(), tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(TemplateResource).Namespace(RemediatorNamespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TemplateRef references a TestRemediationTemplate.
func TemplateRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Namespace: RemediatorNamespace, Name: name}
}

// CreateNHC creates a NodeHealthCheck named after its scenario, selecting
// the scenario's nodes, with a template of the same name, minHealthy 0,
// Ready False/Unknown for 2s, and the given changes.
func (e *Env) CreateNHC(t testing.TB, scenario string, change func(*v1alpha1.NodeHealthCheckSpec)) *v1alpha1.NodeHealthCheck {
	t.Helper()
	nhc := &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: scenario},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{ScenarioLabel: scenario}},
			RemediationTemplate: ptr.To(TemplateRef(scenario)),
			MinHealthy:          ptr.To(intstr.FromInt32(0)),
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 2 * time.Second}},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: metav1.Duration{Duration: 2 * time.Second}},
			},
		},
	}
	if change != nil {
		change(&nhc.Spec)
	}
	created, err := e.NHC.RemediationV1alpha1().NodeHealthChecks().Create(context.Background(), nhc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		e.deleteNHC(scenario)
		e.deleteRemediationsOf(scenario)
	})
	return created
}

// deleteNHC deletes a NodeHealthCheck that may still list remediations, with
// the override the remediation guard of the default install asks for.
func (e *Env) deleteNHC(name string) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.OverrideRemediationGuardAnnotation)
	_, _ = e.NHC.RemediationV1alpha1().NodeHealthChecks().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	_ = e.NHC.RemediationV1alpha1().NodeHealthChecks().Delete(context.Background(), name, metav1.DeleteOptions{})
}

// DeleteNHC deletes a NodeHealthCheck now; its remediation resources stay
// (there is no garbage collector), as they do under a remediator's
// finalizer, until the test ends.
func (e *Env) DeleteNHC(t testing.TB, name string) {
	t.Helper()
	e.deleteNHC(name)
}

// UpdateNHC changes a NodeHealthCheck's spec.
func (e *Env) UpdateNHC(t testing.TB, name string, change func(*v1alpha1.NodeHealthCheckSpec)) {
	t.Helper()
	require.NoError(t, retryOnConflict(func() error {
		nhc, err := e.NHC.RemediationV1alpha1().NodeHealthChecks().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(&nhc.Spec)
		_, err = e.NHC.RemediationV1alpha1().NodeHealthChecks().Update(context.Background(), nhc, metav1.UpdateOptions{})
		return err
	}))
}

// GetNHC reads a NodeHealthCheck.
func (e *Env) GetNHC(t testing.TB, name string) *v1alpha1.NodeHealthCheck {
	t.Helper()
	nhc, err := e.NHC.RemediationV1alpha1().NodeHealthChecks().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return nhc
}

// Remediations lists the TestRemediations owned by a NodeHealthCheck, by node.
func (e *Env) Remediations(t testing.TB, nhc string) map[string][]unstructured.Unstructured {
	t.Helper()
	list, err := e.Dynamic.Resource(RemediationResource).Namespace(RemediatorNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	byNode := map[string][]unstructured.Unstructured{}
	for _, r := range list.Items {
		for _, owner := range resource.OwnerNames(&r) {
			if owner == nhc {
				byNode[resource.TargetNode(&r)] = append(byNode[resource.TargetNode(&r)], r)
			}
		}
	}
	return byNode
}

// SetRemediationCondition sets a condition on a remediation resource's status, as its remediator would.
func (e *Env) SetRemediationCondition(t testing.TB, name, conditionType, status string) {
	t.Helper()
	e.updateRemediation(t, name, true, func(r *unstructured.Unstructured) error {
		conditions, _, _ := unstructured.NestedSlice(r.Object, "status", "conditions")
		conditions = append(conditions, map[string]any{
			"type": conditionType, "status": status, "reason": "E2E", "message": "set by the test",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		})
		return unstructured.SetNestedSlice(r.Object, conditions, "status", "conditions")
	})
}

// SetFinalizers sets a remediation resource's finalizers, as its remediator would.
func (e *Env) SetFinalizers(t testing.TB, name string, finalizers ...string) {
	t.Helper()
	e.updateRemediation(t, name, false, func(r *unstructured.Unstructured) error {
		r.SetFinalizers(finalizers)
		return nil
	})
}

// updateRemediation changes a remediation resource, or its status.
func (e *Env) updateRemediation(t testing.TB, name string, status bool, change func(*unstructured.Unstructured) error) {
	t.Helper()
	client := e.Dynamic.Resource(RemediationResource).Namespace(RemediatorNamespace)
	require.NoError(t, retryOnConflict(func() error {
		r, err := client.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := change(r); err != nil {
			return err
		}
		if status {
			_, err = client.UpdateStatus(context.Background(), r, metav1.UpdateOptions{})
		} else {
			_, err = client.Update(context.Background(), r, metav1.UpdateOptions{})
		}
		return err
	}))
}

// DeleteRemediation deletes a remediation resource, as its remediator may
// once it is done.
func (e *Env) DeleteRemediation(t testing.TB, name string) {
	t.Helper()
	require.NoError(t, e.Dynamic.Resource(RemediationResource).Namespace(RemediatorNamespace).Delete(context.Background(), name, metav1.DeleteOptions{}))
}

// deleteRemediationsOf removes a scenario's resources: there is no garbage collector.
func (e *Env) deleteRemediationsOf(nhc string) {
	client := e.Dynamic.Resource(RemediationResource).Namespace(RemediatorNamespace)
	list, err := client.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, r := range list.Items {
		for _, owner := range resource.OwnerNames(&r) {
			if owner == nhc {
				r.SetFinalizers(nil)
				_, _ = client.Update(context.Background(), &r, metav1.UpdateOptions{})
				_ = client.Delete(context.Background(), r.GetName(), metav1.DeleteOptions{})
			}
		}
	}
}

// Events lists the events recorded on a NodeHealthCheck, the one of the
// name now when it exists.
func (e *Env) Events(t testing.TB, nhc string) []corev1.Event {
	t.Helper()
	selector := "involvedObject.kind=NodeHealthCheck,involvedObject.name=" + nhc
	// An earlier NodeHealthCheck of the name (a test run again) left its
	// own events.
	if current, err := e.NHC.RemediationV1alpha1().NodeHealthChecks().Get(context.Background(), nhc, metav1.GetOptions{}); err == nil {
		selector += ",involvedObject.uid=" + string(current.UID)
	}
	list, err := e.Kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{FieldSelector: selector})
	require.NoError(t, err)
	return list.Items
}

func retryOnConflict(fn func() error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, fn)
}

// AggregateClusterRoles does what kube-controller-manager's aggregation
// controller does, which this control plane lacks: it fills an aggregated
// ClusterRole with the rules of the ClusterRoles its selectors match.
func (e *Env) AggregateClusterRoles(t testing.TB, name string) {
	t.Helper()
	ctx := t.Context()
	roles := e.Kube.RbacV1().ClusterRoles()
	aggregated, err := roles.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	var rules []rbacv1.PolicyRule
	for _, selector := range aggregated.AggregationRule.ClusterRoleSelectors {
		list, err := roles.List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&selector)})
		require.NoError(t, err)
		for _, role := range list.Items {
			rules = append(rules, role.Rules...)
		}
	}
	aggregated.Rules = rules
	_, err = roles.Update(ctx, aggregated, metav1.UpdateOptions{})
	require.NoError(t, err)
}
