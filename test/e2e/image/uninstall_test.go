package image

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// uninstallKeepsTheLeaseNamespace uninstalls an installed release file as
// the README says, `kubectl delete -f nhc-controller.yaml`: it exits 0, and
// the lease namespace, which node-maintenance-operator made and keeps a
// lease in, stays with that lease.
func uninstallKeepsTheLeaseNamespace(t *testing.T, env *framework.Env, installFile string) {
	t.Helper()
	env.FinalizeDeletedNamespaces(t, framework.InstallNamespace)
	_, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeleases.DefaultNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, env.TakeMaintenanceLease(t))

	out, err := env.Cluster.Kubectl("delete", "-f", installFile)
	require.NoError(t, err, "the uninstall exits 0: %s", out)
	assert.Contains(t, out, `deployment.apps "nhc-controller" deleted`)
	env.AssertLeaseNamespaceKept(t)
}
