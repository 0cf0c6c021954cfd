package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// refuseRemediationsOf installs a ValidatingAdmissionPolicy that refuses,
// with a 403 as a remediator's webhook built on controller-runtime does,
// every test remediation resource of one node, and waits until the API
// server enforces it. At cleanup it removes it, and waits until it no
// longer does.
func refuseRemediationsOf(t *testing.T, node string) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-" + node
	admission := kubeClient.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{framework.RemediationResource.Group}, APIVersions: []string{"*"},
						Resources: []string{framework.RemediationResource.Resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.annotations) || object.metadata.annotations[?'" + v1alpha1.NodeNameAnnotation + "'].orValue('') != '" + node + "'",
				Message:    "the remediator cannot fence " + node,
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	_, err := admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	probe := func() error {
		r := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediation",
			"metadata": map[string]any{"name": "probe", "namespace": framework.RemediatorNamespace,
				"annotations": map[string]any{v1alpha1.NodeNameAnnotation: node}},
			"spec": map[string]any{},
		}}
		_, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Create(ctx, r, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	t.Cleanup(func() {
		_ = admission.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admission.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		framework.Eventually(t, 30*time.Second, "the refusal to be lifted", func() bool { return probe() == nil })
	})
	framework.Eventually(t, 30*time.Second, "the refusal to be enforced", func() bool { return apierrors.IsForbidden(probe()) })
}

// A node whose remediation admission refuses with a 403 (a remediator's
// webhook) is skipped with an event and retried later; its kind stays in
// use, the NodeHealthCheck enabled, and the other nodes are remediated
// meanwhile, though the status showed no remediation and so one create
// went a sync.
func TestANodeWhoseRemediationAdmissionRefusesHoldsNoOtherBack(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "refused", nil)
	nhc := fw.CreateNHC(t, "refused", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("refused"))
	})
	refused := "refused-a"
	fw.CreateNode(t, "refused", refused)
	fw.SetCondition(t, refused, corev1.NodeReady, corev1.ConditionFalse, 2*time.Hour)
	other := unhealthyNode(t, "refused", "refused-b", corev1.ConditionFalse)
	refuseRemediationsOf(t, refused)

	now := time.Now()
	out := env.sync(t, nhc.Name, now)
	skipped := out.events("RemediationSkipped")
	require.Len(t, skipped, 1, "the node unhealthy longest goes first, and is refused")
	assert.Contains(t, skipped[0], "the remediator cannot fence "+refused)
	assert.Contains(t, skipped[0], "refused by admission")
	assert.Empty(t, remediationsOf(t, refused))

	out = env.sync(t, nhc.Name, now)
	assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node " + other + ""}, out.events("RemediationCreated"),
		"the other node is remediated while the refused one waits")
	assert.Len(t, remediationsOf(t, other), 1)
	assert.False(t, isDisabled(out.NHC), "the kind stays in use: the NodeHealthCheck is enabled")

	out = env.sync(t, nhc.Name, now.Add(time.Second))
	assert.Len(t, out.events("RemediationSkipped"), 1, "the refused node is tried again a second later")
	assert.Empty(t, remediationsOf(t, refused))
	assert.False(t, isDisabled(out.NHC))
}

// isDisabled tells whether a NodeHealthCheck's Disabled condition is True.
func isDisabled(nhc *v1alpha1.NodeHealthCheck) bool {
	for _, c := range nhc.Status.Conditions {
		if c.Type == v1alpha1.ConditionDisabled {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
