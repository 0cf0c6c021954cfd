package chart

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestHelmInstallRemediatesAndUninstallKeepsTheLeaseNamespace installs the
// chart with `helm install`, runs the controller as the chart's
// ServiceAccount with the chart's flags (this control plane runs no pods),
// upgrades it, and watches it remediate a node under its node lease, in the
// lease namespace it created with the chart's rights. `helm uninstall`
// removes the release, exits 0 and leaves the lease namespace with every
// lease in it, and installing again uses that namespace.
func TestHelmInstallRemediatesAndUninstallKeepsTheLeaseNamespace(t *testing.T) {
	out, err := env.Cluster.Helm("install", "nhc", chartDir, "--namespace", "nhc-system", "--create-namespace")
	require.NoError(t, err, out)
	_, err = env.Kube.CoreV1().Namespaces().Get(t.Context(), nodeleases.DefaultNamespace, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the lease namespace is not the chart's: %v", err)

	out, err = env.Cluster.Kubectl("apply", "-f", filepath.Join(controlplane.RepoRoot(), "test/crds/rbac"))
	require.NoError(t, err, out)
	env.AggregateClusterRoles(t, "nhc-controller-remediators")
	// An upgrade leaves the aggregated rules to the aggregation controller:
	// Helm's server-side apply does not own them, so it neither conflicts
	// with that controller nor empties the role.
	out, err = env.Cluster.Helm("upgrade", "nhc", chartDir, "--namespace", "nhc-system", "--set", "logging.verbosity=2")
	require.NoError(t, err, out)
	role, err := env.Kube.RbacV1().ClusterRoles().Get(t.Context(), "nhc-controller-remediators", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, role.Rules, "the aggregated rules survive helm upgrade")
	c := env.StartAsDeployed(t, "chart", env.Binary)
	defer func() { assert.NoError(t, c.Stop()) }()

	const scenario = "chart"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "a remediation created with the chart's rights", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	lease, err := env.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Get(t.Context(), "node-"+nodes[0], metav1.GetOptions{})
	require.NoError(t, err, "the node lease taken, in the namespace created, with the chart's rights")
	assert.Equal(t, "NodeHealthCheck-"+scenario, *lease.Spec.HolderIdentity)
	require.NoError(t, env.TakeMaintenanceLease(t))
	env.AssertTheLeaseScopeHolds(t)
	env.Recover(t, nodes[0])
	framework.Eventually(t, 30*time.Second, "the remediation deleted once the node is healthy", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
	require.NoError(t, c.Stop())

	out, err = env.Cluster.Helm("uninstall", "nhc", "--namespace", "nhc-system", "--wait")
	require.NoError(t, err, out)
	_, err = env.Kube.AppsV1().Deployments("nhc-system").Get(t.Context(), "nhc-controller", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the release is gone: %v", err)
	env.AssertLeaseNamespaceKept(t)

	// Installing again goes beside the kept namespace.
	out, err = env.Cluster.Helm("install", "nhc", chartDir, "--namespace", "nhc-system")
	require.NoError(t, err, out)
	out, err = env.Cluster.Helm("uninstall", "nhc", "--namespace", "nhc-system", "--wait")
	require.NoError(t, err, out)
	env.AssertLeaseNamespaceKept(t)
}
