package image

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// uninstallKeepsTheLeaseNamespace uninstalls an installed release file as
// the README says, `kubectl delete -f nhc-controller.yaml`: it exits 0, and
// the lease namespace, which node-maintenance-operator made and keeps a
// lease in, stays with that lease.
func uninstallKeepsTheLeaseNamespace(t *testing.T, env *framework.Env, installFile string) {
	t.Helper()
	env.FinalizeDeletedNamespaces(t, framework.InstallNamespace)
	_, err := env.Kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remediation.DefaultLeaseNamespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.CoordinationV1().Leases(remediation.DefaultLeaseNamespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-under-maintenance"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-maintenance"), LeaseDurationSeconds: ptr.To[int32](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	out, err := env.Cluster.Kubectl("delete", "-f", installFile)
	require.NoError(t, err, "the uninstall exits 0: %s", out)
	assert.Contains(t, out, `deployment.apps "nhc-controller" deleted`)
	namespace, err := env.Kube.CoreV1().Namespaces().Get(t.Context(), remediation.DefaultLeaseNamespace, metav1.GetOptions{})
	require.NoError(t, err, "the lease namespace is kept")
	assert.Nil(t, namespace.DeletionTimestamp, "the lease namespace is not being deleted")
	_, err = env.Kube.CoordinationV1().Leases(remediation.DefaultLeaseNamespace).Get(t.Context(), "node-under-maintenance", metav1.GetOptions{})
	assert.NoError(t, err, "node-maintenance-operator's lease is kept")
}
