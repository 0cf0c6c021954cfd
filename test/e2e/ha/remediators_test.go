package ha

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	lateTemplateResource    = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "lateremediationtemplates"}
	lateRemediationResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "lateremediations"}
)

// lateRemediationsOf lists the LateRemediations of a node, none while the
// kind is not served.
func lateRemediationsOf(node string) int {
	list, err := env.Dynamic.Resource(lateRemediationResource).Namespace(framework.RemediatorNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0
	}
	return len(framework.OfNode(list.Items, node))
}

// installLateRemediator installs the late remediator's CRDs and its template.
func installLateRemediator(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, env.Cluster.InstallCRDs("test/crds/late"))
	_, err := env.Dynamic.Resource(lateTemplateResource).Namespace(framework.RemediatorNamespace).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "LateRemediationTemplate",
		"metadata": map[string]any{"name": name, "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func uninstallLateRemediator(t *testing.T) {
	t.Helper()
	_, err := env.Cluster.Kubectl("delete", "--ignore-not-found", "--wait", "-f", filepath.Join(controlplane.RepoRoot(), "test/crds/late"))
	require.NoError(t, err)
}

// TestARemediatorThatComesAndGoes: a NodeHealthCheck applied before its
// remediator (a common install order) is disabled, then remediates its
// unhealthy node within one retry of the remediator's install; uninstalled
// while it remediates, the remediator disables the NodeHealthCheck again
// instead of leaving it on a stale cache; installed again, it remediates.
func TestARemediatorThatComesAndGoes(t *testing.T) {
	const scenario = "late-remediator"
	late := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "LateRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: scenario}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &late })
	t.Cleanup(func() { uninstallLateRemediator(t) })
	c, err := env.StartController(scenario, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	env.Fail(t, time.Hour, nodes[0])
	disabledBecause := func(text string) func() bool {
		return func() bool {
			s := env.GetNHC(t, scenario).Status
			return s.Phase == v1alpha1.PhaseDisabled && strings.Contains(s.Reason, text)
		}
	}
	framework.Eventually(t, 20*time.Second, "disabled: the remediator is not installed", disabledBecause("LateRemediationTemplate of test.medik8s.io/v1alpha1 is not served by the API server"))

	installLateRemediator(t, scenario)
	framework.Eventually(t, 30*time.Second, "the node remediated within one retry, and the NodeHealthCheck enabled", func() bool {
		return lateRemediationsOf(nodes[0]) == 1 && env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})

	uninstallLateRemediator(t)
	framework.Eventually(t, 30*time.Second, "disabled: the remediator was uninstalled", disabledBecause("not served by the API server"))

	installLateRemediator(t, scenario)
	framework.Eventually(t, 30*time.Second, "the node remediated again once it is back", func() bool {
		return lateRemediationsOf(nodes[0]) == 1 && env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})
}

// TestARemediatorWhoseRoleIsRemovedDisables: the controller's rights on a
// remediator's resources are removed after it remediated (the remediator's
// aggregated ClusterRole deleted). The next remediation's create is
// forbidden: the NodeHealthCheck says which kind and verb, instead of
// retrying on a stale cache; once the rights come back, it remediates.
func TestARemediatorWhoseRoleIsRemovedDisables(t *testing.T) {
	const user, scenario = "controller-losing-rights", "role-removed"
	grant(t, user, "losing-rights-base", append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get", "list", "watch"}})...)
	remediations := rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	revoke := grantRevocable(t, user, "losing-rights-remediations", remediations)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartControllerWithKubeconfig(scenario, kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the first remediation", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })

	revoke()
	env.Fail(t, time.Hour, nodes[1])
	framework.Eventually(t, 30*time.Second, "disabled, naming the kind and the verb", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.Phase == v1alpha1.PhaseDisabled &&
			strings.Contains(s.Reason, "Remediation resources testremediations.test.medik8s.io cannot be watched or written") &&
			strings.Contains(s.Reason, `cannot create resource "testremediations"`)
	})
	assert.Empty(t, env.Remediations(t, scenario)[nodes[1]])

	grant(t, user, "losing-rights-remediations-again", remediations)
	framework.Eventually(t, 60*time.Second, "the remediation, once the rights are back", func() bool {
		return len(env.Remediations(t, scenario)[nodes[1]]) == 1
	})
	framework.Eventually(t, 10*time.Second, "enabled again", func() bool {
		return env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})
}

// grantRevocable is grant, with a function that revokes the grant early.
func grantRevocable(t *testing.T, user, name string, rules ...rbacv1.PolicyRule) func() {
	t.Helper()
	grant(t, user, name, rules...)
	return func() {
		require.NoError(t, env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}))
		require.NoError(t, env.Kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}))
	}
}
