package ha

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestManifestsInstallAndGrantEnough applies the manifests with plain
// kubectl, then runs the controller as their ServiceAccount: with the RBAC
// of the manifests and a remediator's aggregated role, and nothing else, it
// remediates, records events, takes its lease and removes a confirmation.
func TestManifestsInstallAndGrantEnough(t *testing.T) {
	root := controlplane.RepoRoot()
	installManifests(t, root)
	uninstallManifestsDryRun(t, root)

	kubeconfig, err := env.Cluster.UserKubeconfig("system:serviceaccount:nhc-system:nhc-controller", "system:serviceaccounts", "system:serviceaccounts:nhc-system", "system:authenticated")
	require.NoError(t, err)
	const scenario = "rbac"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.HealthyDelay = &metav1.Duration{Duration: -time.Second} })
	c, err := env.StartControllerWithKubeconfig("rbac", kubeconfig, "--leader-elect=true", "--leader-election-namespace=nhc-system")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpLog(os.Stderr)
		}
	})
	defer func() { assert.NoError(t, c.Stop()) }()

	// Without the remediator's rules the NodeHealthCheck says what is missing.
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 20*time.Second, "the NodeHealthCheck disabled for lack of permissions", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.Phase == v1alpha1.PhaseDisabled && strings.Contains(s.Reason, "Grant get on testremediationtemplates.test.medik8s.io")
	})

	env.AggregateClusterRoles(t, "nhc-controller-remediators")
	framework.Eventually(t, 30*time.Second, "a remediation created with the manifests' rights", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	// The manifests' remediation guard refuses to delete the NodeHealthCheck
	// while the controller's status lists the remediation, and lets it be
	// deleted once the status no longer does (below).
	deletion := func() error {
		_, err := env.Cluster.Kubectl("delete", "nodehealthcheck", scenario, "--dry-run=server")
		return err
	}
	framework.Eventually(t, 30*time.Second, "the deletion refused while remediating", func() bool {
		err := deletion()
		return err != nil && strings.Contains(err.Error(), "deletion prohibited due to running remediation: node "+nodes[0]+" has remediations of this NodeHealthCheck")
	})
	lease, err := env.Kube.CoordinationV1().Leases("medik8s-leases").Get(t.Context(), "node-"+nodes[0], metav1.GetOptions{})
	require.NoError(t, err, "the node lease taken with the manifests' rights")
	assert.Equal(t, "NodeHealthCheck-"+scenario, *lease.Spec.HolderIdentity)
	env.AssertTheLeaseScopeHolds(t)
	assertRightsAsListed(t)
	env.Recover(t, nodes[0])
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: "yes"}
	})
	framework.Eventually(t, 10*time.Second, "the remediation deleted and the confirmation removed", func() bool {
		n, err := env.Kube.CoreV1().Nodes().Get(t.Context(), nodes[0], metav1.GetOptions{})
		require.NoError(t, err)
		_, confirmed := n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
		return !confirmed && len(env.Remediations(t, scenario)) == 0
	})
	framework.Eventually(t, 10*time.Second, "the deletion allowed once nothing remediates", func() bool { return deletion() == nil })
	framework.Eventually(t, 10*time.Second, "the node lease released", func() bool {
		_, err := env.Kube.CoordinationV1().Leases("medik8s-leases").Get(t.Context(), "node-"+nodes[0], metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	framework.Eventually(t, 10*time.Second, "events recorded in namespace default", func() bool { return len(env.Events(t, scenario)) > 0 })
}

// installManifests applies the manifests and the test remediator's RBAC,
// and checks what the manifests install, and the image they deploy.
func installManifests(t *testing.T, root string) {
	// The one-command install: any kustomize or schema error fails it.
	out, err := env.Cluster.Kubectl("apply", "-k", filepath.Join(root, "manifests"))
	require.NoError(t, err, out)
	out, err = env.Cluster.Kubectl("apply", "-f", filepath.Join(root, "test/crds/rbac"))
	require.NoError(t, err, out)
	for _, object := range []string{"deployment/nhc-controller", "service/nhc-controller-metrics", "poddisruptionbudget/nhc-controller", "serviceaccount/nhc-controller"} {
		out, err := env.Cluster.Kubectl("get", "-n", "nhc-system", object, "-o", "name")
		require.NoError(t, err, out)
	}
	image, err := env.Cluster.Kubectl("get", "deployment", "-n", "nhc-system", "nhc-controller", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	require.NoError(t, err)
	assert.Equal(t, "nhc-controller:dev", image, "the image comes from the kustomization's images:")
}

// uninstallManifestsDryRun checks what kubectl delete -k would remove.
func uninstallManifestsDryRun(t *testing.T, root string) {
	// kubectl delete -k removes all of it and exits 0; the shared lease
	// namespace is not part of it. A server-side dry run shows what, without
	// taking the CRD from the other tests (test/e2e/chart deletes for real).
	out, err := env.Cluster.Kubectl("delete", "-k", filepath.Join(root, "manifests"), "--dry-run=server")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "medik8s-leases")
	for _, object := range []string{"customresourcedefinition.apiextensions.k8s.io \"nodehealthchecks.remediation.medik8s.io\" deleted",
		"namespace \"nhc-system\" deleted", "deployment.apps \"nhc-controller\" deleted", "clusterrole.rbac.authorization.k8s.io \"nhc-controller\" deleted",
		"validatingadmissionpolicy.admissionregistration.k8s.io \"nhc-controller-remediation-guard\" deleted"} {
		assert.Contains(t, out, object)
	}
}
