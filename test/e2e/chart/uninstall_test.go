package chart

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestTheChartPrunedAsArgoCDDoesKeepsTheLeaseNamespace installs and
// uninstalls the chart as Argo CD does: it renders with `helm template`
// (no lookup, no keep policy) and applies, then prunes what it applied.
// The delete exits 0 and leaves the lease namespace with
// node-maintenance-operator's lease. The release's namespace is made
// beforehand, as Argo CD's CreateNamespace would, and outlives the prune.
func TestTheChartPrunedAsArgoCDDoesKeepsTheLeaseNamespace(t *testing.T) {
	const namespace = "argocd-nhc"
	_, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rendered, err := env.Cluster.Helm("template", "nhc", chartDir, "--namespace", namespace, "--include-crds")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "rendered.yaml")
	require.NoError(t, os.WriteFile(file, []byte(rendered), 0o600))
	out, err := env.Cluster.Kubectl("apply", "-f", file)
	require.NoError(t, err, out)
	if err := env.TakeMaintenanceLease(t); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}

	out, err = env.Cluster.Kubectl("delete", "-f", file)
	require.NoError(t, err, "the prune exits 0: %s", out)
	assert.NotContains(t, out, nodeleases.DefaultNamespace)
	assert.Contains(t, out, `deployment.apps "nhc-controller" deleted`)
	env.AssertLeaseNamespaceKept(t)
}

// TestKubectlDeleteKeepsTheLeaseNamespace uninstalls the plain install as
// docs/operating.md says, `kubectl delete -k manifests/`: everything goes,
// the command exits 0, and the lease namespace, which is not part of the
// install, stays with node-maintenance-operator's lease. It deletes the
// CRD, so it runs last.
func TestKubectlDeleteKeepsTheLeaseNamespace(t *testing.T) {
	env.FinalizeDeletedNamespaces(t, framework.InstallNamespace)
	manifests := filepath.Join(controlplane.RepoRoot(), "manifests")
	out, err := env.Cluster.Kubectl("apply", "-k", manifests)
	require.NoError(t, err, out)
	if err := env.TakeMaintenanceLease(t); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// The API server loads a new policy within a second or so.
	framework.Eventually(t, 30*time.Second, "the lease namespace guard in force", func() bool {
		_, err := env.Cluster.Kubectl("delete", "namespace", nodeleases.DefaultNamespace, "--dry-run=server")
		return err != nil
	})

	out, err = env.Cluster.Kubectl("delete", "-k", manifests)
	require.NoError(t, err, "the uninstall exits 0: %s", out)
	assert.NotContains(t, out, nodeleases.DefaultNamespace)
	for _, deleted := range []string{`deployment.apps "nhc-controller" deleted`, `namespace "nhc-system" deleted`,
		`validatingadmissionpolicy.admissionregistration.k8s.io "nhc-controller-lease-namespace-guard" deleted`,
		`validatingadmissionpolicy.admissionregistration.k8s.io "nhc-controller-node-lease-scope" deleted`,
		`clusterrolebinding.rbac.authorization.k8s.io "nhc-controller-node-leases" deleted`,
		`customresourcedefinition.apiextensions.k8s.io "nodehealthchecks.remediation.medik8s.io" deleted`} {
		assert.Contains(t, out, deleted)
	}
	env.AssertLeaseNamespaceKept(t)

	// With the guard gone, the namespace can be deleted as any other.
	framework.Eventually(t, 30*time.Second, "the lease namespace deletable once nhc-controller is gone", func() bool {
		_, err := env.Cluster.Kubectl("delete", "namespace", nodeleases.DefaultNamespace, "--dry-run=server")
		return err == nil
	})
}
