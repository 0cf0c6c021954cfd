package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func disabledCondition(t *testing.T, nhc string) *metav1.Condition {
	for _, c := range statusOf(t, nhc).Conditions {
		if c.Type == v1alpha1.ConditionDisabled {
			return &c
		}
	}
	return nil
}

func TestMissingTemplateDisablesUntilItIsCreated(t *testing.T) {
	t.Parallel()
	const scenario = "missing-template"
	nodes := env.CreateNodes(t, scenario, 2)
	env.Fail(t, time.Hour, nodes[0])
	env.CreateNHC(t, scenario, nil)
	framework.Eventually(t, 10*time.Second, "the NodeHealthCheck to be disabled", func() bool {
		c := disabledCondition(t, scenario)
		return statusOf(t, scenario).Phase == v1alpha1.PhaseDisabled && c != nil && c.Status == metav1.ConditionTrue
	})
	c := disabledCondition(t, scenario)
	assert.Equal(t, v1alpha1.ReasonTemplateNotFound, c.Reason)
	assert.Equal(t, "Remediation template TestRemediationTemplate remediators/missing-template not found: failed to get external remediation template remediators/missing-template", c.Message)
	assert.Equal(t, "NHC is disabled: RemediationTemplateNotFound: "+c.Message, statusOf(t, scenario).Reason)
	assert.Empty(t, remediated(t, scenario))

	env.CreateTemplate(t, scenario, nil)
	framework.Eventually(t, 10*time.Second, "enabled and remediating once the template exists", func() bool {
		c := disabledCondition(t, scenario)
		return c != nil && c.Status == metav1.ConditionFalse && remediated(t, scenario)[nodes[0]]
	})
}

func TestInvalidTemplateDisables(t *testing.T) {
	t.Parallel()
	const scenario = "invalid-template"
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": scenario, "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{}},
	}}
	_, err := env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Create(context.Background(), tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Delete(context.Background(), scenario, metav1.DeleteOptions{})
	})
	env.CreateNodes(t, scenario, 1)
	env.CreateNHC(t, scenario, nil)
	framework.Eventually(t, 10*time.Second, "the NodeHealthCheck to be disabled", func() bool {
		c := disabledCondition(t, scenario)
		return c != nil && c.Reason == v1alpha1.ReasonTemplateInvalid
	})
	assert.Equal(t, "Remediation template TestRemediationTemplate remediators/invalid-template is invalid: it has no spec.template.spec", disabledCondition(t, scenario).Message)
}

func TestEscalation(t *testing.T) {
	t.Parallel()
	const scenario = "escalation"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	for _, name := range []string{"escalation-soft", "escalation-hard", "escalation-last"} {
		env.CreateTemplate(t, name, multi)
	}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("escalation-soft"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("escalation-hard"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("escalation-last"), Order: 3, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the first step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	first := env.Remediations(t, scenario)[nodes[0]][0]
	assert.Equal(t, "escalation-soft", first.GetAnnotations()[v1alpha1.TemplateNameAnnotation])

	// Succeeded=False: the next step starts at once.
	env.SetRemediationCondition(t, first.GetName(), v1alpha1.SucceededCondition, "False")
	framework.Eventually(t, 10*time.Second, "the second step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 2 })
	var second unstructured.Unstructured
	for _, r := range env.Remediations(t, scenario)[nodes[0]] {
		switch r.GetName() {
		case first.GetName():
			_, err := time.Parse(time.RFC3339, r.GetAnnotations()[v1alpha1.TimedOutAnnotation])
			assert.NoError(t, err, "the failed step carries an RFC 3339 nhc-timed-out annotation")
		default:
			second = r
		}
	}
	assert.Equal(t, "escalation-hard", second.GetAnnotations()[v1alpha1.TemplateNameAnnotation])

	// Succeeded=True, then the timeout: the last step starts, and the
	// succeeded one never gets the annotation.
	env.SetRemediationCondition(t, second.GetName(), v1alpha1.SucceededCondition, "True")
	framework.Eventually(t, 75*time.Second, "the third step after the 1m timeout", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 3 })
	for _, r := range env.Remediations(t, scenario)[nodes[0]] {
		if r.GetName() == second.GetName() {
			assert.NotContains(t, r.GetAnnotations(), v1alpha1.TimedOutAnnotation)
		}
	}
	framework.Eventually(t, 5*time.Second, "the status to list the three steps", func() bool {
		s := statusOf(t, scenario)
		return len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 3
	})
	rems := statusOf(t, scenario).UnhealthyNodes[0].Remediations
	assert.Equal(t, []string{"escalation-soft", "escalation-hard", "escalation-last"}, []string{rems[0].TemplateName, rems[1].TemplateName, rems[2].TemplateName})
	assert.NotNil(t, rems[0].TimedOut)
	assert.NotNil(t, rems[1].TimedOut)
	assert.Nil(t, rems[2].TimedOut)

	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "all steps to be deleted", func() bool { return len(env.Remediations(t, scenario)) == 0 })
}

func TestHealthyDelay(t *testing.T) {
	t.Parallel()
	t.Run("positive", func(t *testing.T) {
		t.Parallel()
		const scenario = "healthy-delay"
		env.CreateTemplate(t, scenario, nil)
		nodes := env.CreateNodes(t, scenario, 2)
		env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: 4 * time.Second} })
		env.Fail(t, time.Hour, nodes[0])
		framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return remediated(t, scenario)[nodes[0]] })
		recovered := time.Now()
		env.Recover(t, nodes[0])
		framework.Eventually(t, 3*time.Second, "healthyDelayed in the status", func() bool {
			s := statusOf(t, scenario)
			return len(s.UnhealthyNodes) == 1 && s.UnhealthyNodes[0].HealthyDelayed != nil && *s.UnhealthyNodes[0].HealthyDelayed
		})
		r := env.Remediations(t, scenario)[nodes[0]][0]
		assert.NotEmpty(t, r.GetAnnotations()[v1alpha1.HealthyDelayAnnotation])
		framework.Consistently(t, time.Until(recovered.Add(3*time.Second)), "the remediation kept during the delay", func() bool { return remediated(t, scenario)[nodes[0]] })
		framework.Eventually(t, 5*time.Second, "its deletion after the delay", func() bool { return len(remediated(t, scenario)) == 0 })
	})
	t.Run("negative, then manually confirmed", func(t *testing.T) {
		t.Parallel()
		const scenario = "healthy-delay-manual"
		env.CreateTemplate(t, scenario, nil)
		nodes := env.CreateNodes(t, scenario, 2)
		env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: -time.Second} })
		env.Fail(t, time.Hour, nodes[0])
		framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return remediated(t, scenario)[nodes[0]] })
		env.Recover(t, nodes[0])
		framework.Eventually(t, 5*time.Second, "healthyDelayed in the status", func() bool {
			s := statusOf(t, scenario)
			return len(s.UnhealthyNodes) == 1 && s.UnhealthyNodes[0].HealthyDelayed != nil
		})
		framework.Consistently(t, 3*time.Second, "the remediation kept without confirmation", func() bool { return remediated(t, scenario)[nodes[0]] })

		env.UpdateNode(t, nodes[0], func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: "by @admin"}
		})
		framework.Eventually(t, 5*time.Second, "the remediation deleted on confirmation", func() bool { return len(remediated(t, scenario)) == 0 })
		framework.Eventually(t, 5*time.Second, "the confirmation annotation removed", func() bool {
			n, err := env.Kube.CoreV1().Nodes().Get(context.Background(), nodes[0], metav1.GetOptions{})
			require.NoError(t, err)
			_, ok := n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
			return !ok
		})
		framework.Eventually(t, 5*time.Second, "a clean status", func() bool { return len(statusOf(t, scenario).UnhealthyNodes) == 0 })
	})
}
