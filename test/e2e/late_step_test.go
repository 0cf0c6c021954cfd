package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestALateEscalationStepRunsItsWholeTimeout: "The `timeout` field
// determines when the next remediation is invoked" (EscalatingRemediations),
// and a step is given up with the "remediation.medik8s.io/nhc-timed-out"
// annotation "When running into a timeout". A second step held back long
// after the first timed out still runs its whole minute once it starts:
// the node's lease, taken for the first step, is overdue three step
// durations after the second step's own start, not 3 × 1m + 1m after the
// lease was taken.
func TestALateEscalationStepRunsItsWholeTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		// hold keeps the second step from starting; the function it returns
		// lets it start.
		hold func(t *testing.T, scenario, secondTemplate string) (release func())
	}{
		// "When pauseRequests has at least one value set, no new
		// remediation will be started, while ongoing remediations keep
		// running." Nothing runs on the node while the first step's time
		// is up, so its lease is not renewed and has ended when the
		// second step takes it.
		{"late-step-paused", func(t *testing.T, scenario, _ string) func() {
			env.UpdateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = []string{"upgrade by @admin"} })
			return func() { env.UpdateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = nil }) }
		}},
		// The remediator's admission refuses the second step's resource:
		// the controller tries it again every 15 s at most, taking the
		// node's lease each time, which keeps the first step's lease, and
		// its acquire time, in force.
		{"late-step-refused", func(t *testing.T, _, secondTemplate string) func() {
			return refuseRemediationsFrom(t, secondTemplate)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			lateStep(t, tc.scenario, tc.hold)
		})
	}
}

func lateStep(t *testing.T, scenario string, hold func(t *testing.T, scenario, secondTemplate string) func()) {
	first, second := scenario+"-first", scenario+"-second"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	env.CreateTemplate(t, first, multi)
	env.CreateTemplate(t, second, multi)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		// A minute is the shortest timeout the API accepts.
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef(first), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef(second), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the first step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	started := env.Remediations(t, scenario)[nodes[0]][0].GetCreationTimestamp()
	release := hold(t, scenario, second)
	// The e2e controller takes node leases (--node-leases defaults to true).
	lease, err := env.Kube.CoordinationV1().Leases(nodeleases.Namespace()).Get(t.Context(), health.LeaseName(nodes[0]), metav1.GetOptions{})
	require.NoError(t, err, "the first step took the node's lease")
	require.Equal(t, health.LeaseHolder(scenario), ptr.Deref(lease.Spec.HolderIdentity, ""))

	// Held past the lease's acquire time + 3 × 1m + the first step's 1m.
	time.Sleep(time.Until(started.Add(4*time.Minute + 30*time.Second)))
	require.Len(t, env.Remediations(t, scenario)[nodes[0]], 1, "no second step while it is held")
	release()

	var step2 map[string]string
	var step2Started metav1.Time
	framework.Eventually(t, 30*time.Second, "the second step once released", func() bool {
		for _, r := range env.Remediations(t, scenario)[nodes[0]] {
			if r.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == second {
				step2, step2Started = r.GetAnnotations(), r.GetCreationTimestamp()
				return true
			}
		}
		return false
	})
	require.NotContains(t, step2, v1alpha1.TimedOutAnnotation, "the second step was created timed out")
	running := func() bool {
		s := statusOf(t, scenario)
		if len(s.UnhealthyNodes) != 1 || len(s.UnhealthyNodes[0].Remediations) != 2 {
			return false
		}
		r := s.UnhealthyNodes[0].Remediations[1]
		return r.TemplateName == second && r.TimedOut == nil
	}
	framework.Eventually(t, 10*time.Second, "the status to show the second step running", running)
	var seen string
	t.Cleanup(func() {
		if t.Failed() && seen != "" {
			t.Logf("the second step, created at %v, last seen: %s", step2Started, seen)
		}
	})
	stillRunning := func() bool {
		for _, r := range env.Remediations(t, scenario)[nodes[0]] {
			if r.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == second {
				at, timedOut := r.GetAnnotations()[v1alpha1.TimedOutAnnotation]
				seen = fmt.Sprintf("%s=%q at %v", v1alpha1.TimedOutAnnotation, at, time.Now().Format(time.RFC3339))
				return !timedOut && running()
			}
		}
		return false
	}
	// The creating sync looks again at the step's own deadline; node
	// events make the controller evaluate the NodeHealthCheck sooner, as
	// they do all the time in a cluster: the other node's Ready condition
	// is written anew every 10 s.
	for until := step2Started.Add(50 * time.Second); time.Now().Before(until); {
		env.Recover(t, nodes[1])
		framework.Consistently(t, min(10*time.Second, time.Until(until)), "the second step running, not timed out", stillRunning)
	}

	// Its own minute ends it.
	var timedOut string
	framework.Eventually(t, time.Until(step2Started.Add(90*time.Second)), "the second step's own timeout", func() bool {
		for _, r := range env.Remediations(t, scenario)[nodes[0]] {
			if r.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == second {
				timedOut = r.GetAnnotations()[v1alpha1.TimedOutAnnotation]
			}
		}
		return timedOut != ""
	})
	at, err := time.Parse(time.RFC3339, timedOut)
	require.NoError(t, err)
	assert.False(t, at.Before(step2Started.Add(time.Minute)), "timed out at %v, before a minute from its start at %v", at, step2Started)

	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "all steps deleted", func() bool { return len(env.Remediations(t, scenario)) == 0 })
}

// refuseRemediationsFrom installs a ValidatingAdmissionPolicy that refuses,
// with a 403 as a remediator's webhook would, the creates of remediation
// resources from one template, and waits until the API server enforces it.
// The function it returns removes it, and waits until it is lifted.
func refuseRemediationsFrom(t *testing.T, template string) func() {
	t.Helper()
	// Not the test's context: the refusal is lifted at cleanup too.
	ctx := context.Background()
	name := "refuse-" + template
	admission := env.Kube.AdmissionregistrationV1()
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
				Expression: "!has(object.metadata.annotations) || object.metadata.annotations[?'" + v1alpha1.TemplateNameAnnotation + "'].orValue('') != '" + template + "'",
				Message:    "the remediator of " + template + " is not ready",
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
				"annotations": map[string]any{v1alpha1.TemplateNameAnnotation: template}},
			"spec": map[string]any{},
		}}
		_, err := env.Dynamic.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).
			Create(ctx, r, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	lift := func() {
		_ = admission.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admission.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		framework.Eventually(t, 30*time.Second, "the refusal to be lifted", func() bool { return probe() == nil })
	}
	t.Cleanup(lift)
	framework.Eventually(t, 30*time.Second, "the refusal to be enforced", func() bool { return apierrors.IsForbidden(probe()) })
	return lift
}
