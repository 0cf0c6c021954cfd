package framework

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// maintenanceLease is a node lease of node-maintenance-operator, which
// shares the lease namespace: no uninstall of nhc-controller may take it.
const maintenanceLease = "node-under-maintenance"

// TakeMaintenanceLease creates node-maintenance-operator's lease in the
// lease namespace.
func (e *Env) TakeMaintenanceLease(t *testing.T) error {
	_, err := e.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: maintenanceLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("node-maintenance"), LeaseDurationSeconds: ptr.To[int32](3600)},
	}, metav1.CreateOptions{})
	return err
}

// AssertLeaseNamespaceKept asserts that the lease namespace and
// node-maintenance-operator's lease in it outlived an uninstall.
func (e *Env) AssertLeaseNamespaceKept(t *testing.T) {
	t.Helper()
	namespace, err := e.Kube.CoreV1().Namespaces().Get(t.Context(), nodeleases.DefaultNamespace, metav1.GetOptions{})
	require.NoError(t, err, "the lease namespace is kept")
	assert.Nil(t, namespace.DeletionTimestamp, "the lease namespace is not being deleted")
	_, err = e.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Get(t.Context(), maintenanceLease, metav1.GetOptions{})
	assert.NoError(t, err, "node-maintenance-operator's lease is kept")
}
