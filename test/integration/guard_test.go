package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// guardName names the remediation guard's policy and binding.
const guardName = "nhc-controller-remediation-guard"

// installGuard creates the remediation guard's ValidatingAdmissionPolicy and
// binding as the default install (kubectl apply -k manifests/) carries them,
// and waits until the API server enforces it on probe, a NodeHealthCheck
// that remediates. At cleanup it removes them and waits until the API
// server no longer enforces them, for the tests that follow.
func installGuard(t *testing.T, probe string) {
	t.Helper()
	ctx := context.Background()
	install, err := cluster.Kubectl("kustomize", filepath.Join(controlplane.RepoRoot(), "manifests"))
	require.NoError(t, err)
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, doc := range strings.Split(install, "\n---\n") {
		var object struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &object))
		if object.Metadata.Name != guardName {
			continue
		}
		switch object.Kind {
		case "ValidatingAdmissionPolicy":
			require.NoError(t, yaml.Unmarshal([]byte(doc), &policy))
		case "ValidatingAdmissionPolicyBinding":
			require.NoError(t, yaml.Unmarshal([]byte(doc), &binding))
		}
	}
	require.NotNil(t, policy, "the default install has the remediation guard's policy")
	require.NotNil(t, binding, "the default install has the remediation guard's binding")
	admission := kubeClient.AdmissionregistrationV1()
	_, err = admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	deleteProbe := func() error {
		return nhcClient.RemediationV1alpha1().NodeHealthChecks().Delete(ctx, probe, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	}
	t.Cleanup(func() {
		_ = admission.ValidatingAdmissionPolicyBindings().Delete(ctx, guardName, metav1.DeleteOptions{})
		_ = admission.ValidatingAdmissionPolicies().Delete(ctx, guardName, metav1.DeleteOptions{})
		framework.Eventually(t, 30*time.Second, "the remediation guard to be lifted", func() bool { return deleteProbe() == nil })
	})
	framework.Eventually(t, 30*time.Second, "the remediation guard to be enforced", func() bool { return deleteProbe() != nil })
}

// writeStatus lists nodes in a NodeHealthCheck's status through the status
// subresource, as the controller does: each node of remediating with one
// remediation resource, each node of waiting without.
func writeStatus(t *testing.T, name string, remediating, waiting []string) error {
	t.Helper()
	nhcs := nhcClient.RemediationV1alpha1().NodeHealthChecks()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nhc, err := nhcs.Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		nhc.Status.UnhealthyNodes = nil
		for _, node := range remediating {
			nhc.Status.UnhealthyNodes = append(nhc.Status.UnhealthyNodes, &v1alpha1.UnhealthyNode{Name: node, Remediations: []*v1alpha1.Remediation{{
				Resource: corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediation", Namespace: framework.RemediatorNamespace, Name: node},
				Started:  metav1.Now(),
			}}})
		}
		for _, node := range waiting {
			nhc.Status.UnhealthyNodes = append(nhc.Status.UnhealthyNodes, &v1alpha1.UnhealthyNode{Name: node})
		}
		nhc.Status.RemediatingNodes = ptr.To(int32(len(remediating)))
		_, err = nhcs.UpdateStatus(context.Background(), nhc, metav1.UpdateOptions{})
		return err
	})
}

// updateNHC changes a NodeHealthCheck, its metadata or its spec, with one
// update (retried on conflicts only), and returns the API server's answer.
func updateNHC(t *testing.T, name string, change func(*v1alpha1.NodeHealthCheck)) error {
	t.Helper()
	nhcs := nhcClient.RemediationV1alpha1().NodeHealthChecks()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nhc, err := nhcs.Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		change(nhc)
		_, err = nhcs.Update(context.Background(), nhc, metav1.UpdateOptions{})
		return err
	})
}

func deleteNHC(name string) error {
	return nhcClient.RemediationV1alpha1().NodeHealthChecks().Delete(context.Background(), name, metav1.DeleteOptions{})
}

// refused asserts that the API server refused a request with the guard's
// message: upstream's words first, then the node, then the override.
func refused(t *testing.T, err error, prohibited, node string) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "refused as forbidden: %v", err)
	assert.Contains(t, err.Error(), prohibited+" prohibited due to running remediation: node "+node)
	assert.Contains(t, err.Error(), "remediation.medik8s.io/override-remediation-guard=true")
}

// escalation is a two-step escalation of test templates.
func escalation(s *v1alpha1.NodeHealthCheckSpec) {
	s.RemediationTemplate = nil
	s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
		{RemediationTemplate: framework.TemplateRef("guard-first"), Order: 1, Timeout: metav1.Duration{Duration: 5 * time.Minute}},
		{RemediationTemplate: framework.TemplateRef("guard-second"), Order: 2, Timeout: metav1.Duration{Duration: 10 * time.Minute}},
	}
}

// TestTheRemediationGuard proves the default install's remediation guard:
// while a NodeHealthCheck's status lists a remediation, it may not be
// deleted, nor its selector or templates changed; everything else stays
// allowed, the status subresource included, and so is everything when it
// does not remediate, or with the override annotation.
func TestTheRemediationGuard(t *testing.T) {
	const probe = "guard-probe"
	fw.CreateNHC(t, probe, nil)
	require.NoError(t, writeStatus(t, probe, []string{"guard-probe-node"}, nil))
	installGuard(t, probe)

	t.Run("refused while remediating", guardRefusesWhileRemediating)
	t.Run("refused while an escalation remediates", guardRefusesWhileEscalating)
	t.Run("allowed when idle", guardAllowsWhenIdle)
	t.Run("allowed with the override", guardAllowsWithTheOverride)
}

// guardRefusesWhileRemediating: while the status lists remediations, the
// remediation guard refuses deletion and changes of the selector or
// templates, and allows everything else, the status subresource included.
func guardRefusesWhileRemediating(t *testing.T) {
	const name = "guard-remediating"
	fw.CreateNHC(t, name, nil)
	require.NoError(t, writeStatus(t, name, []string{"node-a", "node-b"}, []string{"node-c"}),
		"the status subresource, which the controller writes, is not guarded")

	err := deleteNHC(name)
	refused(t, err, "deletion", "node-a and 1 more have")
	_, err = cluster.Kubectl("delete", "nodehealthcheck", name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Error from server (Forbidden): nodehealthchecks.remediation.medik8s.io "guard-remediating" is forbidden: ValidatingAdmissionPolicy 'nhc-controller-remediation-guard' with binding 'nhc-controller-remediation-guard' denied request: deletion prohibited due to running remediation: node node-a and 1 more have remediations of this NodeHealthCheck. Wait until they end (spec.pauseRequests stops new ones), or, to override: kubectl annotate nodehealthcheck guard-remediating remediation.medik8s.io/override-remediation-guard=true`,
		"what kubectl shows")
	err = nhcClient.RemediationV1alpha1().NodeHealthChecks().DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	refused(t, err, "deletion", "node-a and 1 more have")

	err = updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.Selector.MatchLabels["more"] = "nodes" })
	refused(t, err, "selector update", "node-a")
	err = updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.RemediationTemplate.Name = "another" })
	refused(t, err, "remediation template update", "node-a")
	err = updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { escalation(&nhc.Spec) })
	refused(t, err, "remediation template update", "node-a")

	for _, allowed := range []struct {
		what   string
		change func(*v1alpha1.NodeHealthCheck)
	}{
		{"pause requests", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.PauseRequests = []string{"stop new remediations"} }},
		{"minHealthy", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.MinHealthy = ptr.To(intstr.FromString("51%")) }},
		{"budget to maxUnhealthy", func(nhc *v1alpha1.NodeHealthCheck) {
			nhc.Spec.MinHealthy, nhc.Spec.MaxUnhealthy = nil, ptr.To(intstr.FromInt32(2))
		}},
		{"unhealthy conditions", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.UnhealthyConditions[0].Duration.Duration = time.Minute }},
		{"healthyDelay", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.HealthyDelay = &metav1.Duration{Duration: -time.Second} }},
		{"storm settings", func(nhc *v1alpha1.NodeHealthCheck) {
			nhc.Spec.StormRecoveryThreshold, nhc.Spec.StormCooldownDuration = ptr.To(int32(1)), &metav1.Duration{Duration: time.Minute}
		}},
		{"labels and annotations", func(nhc *v1alpha1.NodeHealthCheck) {
			nhc.Labels = map[string]string{"team": "sre"}
			nhc.Annotations = map[string]string{"note": "remediating", v1alpha1.OverrideRemediationGuardAnnotation: "false"}
		}},
	} {
		assert.NoError(t, updateNHC(t, name, allowed.change), "changing the %s is allowed", allowed.what)
	}
	require.NoError(t, writeStatus(t, name, []string{"node-b"}, nil), "the controller's status writes are allowed")

	// Paused, and with an override annotation that is not "true", it
	// remediates still and is guarded still.
	refused(t, deleteNHC(name), "deletion", "node-b has")
	err = updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.Selector.MatchLabels["more"] = "nodes" })
	refused(t, err, "selector update", "node-b has")
}

// guardRefusesWhileEscalating: while an escalation remediates, the
// remediation guard refuses changes of its steps, and its deletion.
func guardRefusesWhileEscalating(t *testing.T) {
	const name = "guard-escalating"
	fw.CreateNHC(t, name, escalation)
	require.NoError(t, writeStatus(t, name, []string{"node-a"}, nil))
	for what, change := range map[string]func(*v1alpha1.EscalatingRemediation){
		"a timeout":  func(e *v1alpha1.EscalatingRemediation) { e.Timeout.Duration = time.Hour },
		"an order":   func(e *v1alpha1.EscalatingRemediation) { e.Order = 3 },
		"a template": func(e *v1alpha1.EscalatingRemediation) { e.RemediationTemplate.Name = "another" },
	} {
		err := updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { change(&nhc.Spec.EscalatingRemediations[1]) })
		refused(t, err, "escalating remediations update", "node-a")
		assert.NotContains(t, err.Error(), "selector", what)
	}
	err := updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) {
		nhc.Spec.EscalatingRemediations = nil
		nhc.Spec.RemediationTemplate = ptr.To(framework.TemplateRef("guard-first"))
	})
	refused(t, err, "remediation template update", "node-a")
	refused(t, deleteNHC(name), "deletion", "node-a")
}

// guardAllowsWhenIdle: the remediation guard allows everything while the
// status lists no remediation.
func guardAllowsWhenIdle(t *testing.T) {
	// A new NodeHealthCheck has no status yet.
	fw.CreateNHC(t, "guard-new", nil)
	require.NoError(t, updateNHC(t, "guard-new", func(nhc *v1alpha1.NodeHealthCheck) {
		nhc.Spec.Selector.MatchLabels["more"] = "nodes"
		escalation(&nhc.Spec)
	}))
	require.NoError(t, deleteNHC("guard-new"))

	// Unhealthy nodes that wait without a remediation (storm, budget,
	// pause) are no remediation in flight.
	fw.CreateNHC(t, "guard-waiting", nil)
	require.NoError(t, writeStatus(t, "guard-waiting", nil, []string{"node-a", "node-b"}))
	require.NoError(t, updateNHC(t, "guard-waiting", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.RemediationTemplate.Name = "another" }))
	require.NoError(t, deleteNHC("guard-waiting"))

	// Once the remediations are gone from the status, the guard lifts.
	fw.CreateNHC(t, "guard-done", nil)
	require.NoError(t, writeStatus(t, "guard-done", []string{"node-a"}, nil))
	refused(t, deleteNHC("guard-done"), "deletion", "node-a")
	require.NoError(t, writeStatus(t, "guard-done", nil, nil))
	require.NoError(t, updateNHC(t, "guard-done", func(nhc *v1alpha1.NodeHealthCheck) { nhc.Spec.Selector.MatchLabels["more"] = "nodes" }))
	require.NoError(t, deleteNHC("guard-done"))
}

// guardAllowsWithTheOverride: the remediation guard allows everything with
// the override annotation "true", and guards again without it.
func guardAllowsWithTheOverride(t *testing.T) {
	const name = "guard-override"
	fw.CreateNHC(t, name, nil)
	require.NoError(t, writeStatus(t, name, []string{"node-a"}, nil))

	// The override in the very update that changes the selector.
	require.NoError(t, updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) {
		nhc.Annotations = map[string]string{v1alpha1.OverrideRemediationGuardAnnotation: "true"}
		nhc.Spec.Selector.MatchLabels["more"] = "nodes"
	}))
	// Removing it guards again; kubectl annotate, as the message says,
	// lifts it again.
	require.NoError(t, updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { nhc.Annotations = nil }))
	refused(t, updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { escalation(&nhc.Spec) }), "remediation template update", "node-a")
	refused(t, deleteNHC(name), "deletion", "node-a")
	_, err := cluster.Kubectl("annotate", "nodehealthcheck", name, v1alpha1.OverrideRemediationGuardAnnotation+"=true")
	require.NoError(t, err)
	require.NoError(t, updateNHC(t, name, func(nhc *v1alpha1.NodeHealthCheck) { escalation(&nhc.Spec) }))
	_, err = cluster.Kubectl("delete", "nodehealthcheck", name)
	require.NoError(t, err)
}
