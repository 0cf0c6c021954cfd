package chart

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestKubectlDeleteKeepsTheLeaseNamespace uninstalls the plain install as
// docs/operating.md says, `kubectl delete -k manifests/`: everything goes
// but the lease namespace, which the lease namespace guard keeps with
// node-maintenance-operator's leases; kubectl reports that one refusal and
// how to delete the namespace anyway. It deletes the CRD, so it runs last.
func TestKubectlDeleteKeepsTheLeaseNamespace(t *testing.T) {
	manifests := filepath.Join(controlplane.RepoRoot(), "manifests")
	out, err := env.Cluster.Kubectl("apply", "-k", manifests)
	require.NoError(t, err, out)
	if err := takeMaintenanceLease(t); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	// The API server loads a new policy within a second or so.
	framework.Eventually(t, 30*time.Second, "the lease namespace guard in force", func() bool {
		_, err := env.Cluster.Kubectl("delete", "namespace", remediation.DefaultLeaseNamespace, "--dry-run=server")
		return err != nil
	})

	out, err = env.Cluster.Kubectl("delete", "-k", manifests)
	require.Error(t, err, "kubectl reports the refusal")
	assert.Contains(t, err.Error(), "namespace medik8s-leases holds the node leases that the medik8s operators share"+
		" (node-maintenance-operator among them) and is kept when nhc-controller is uninstalled. To delete it anyway:"+
		" kubectl annotate namespace medik8s-leases remediation.medik8s.io/delete-lease-namespace=true")
	for _, deleted := range []string{`deployment.apps "nhc-controller" deleted`, `namespace "nhc-system" deleted`,
		`validatingadmissionpolicy.admissionregistration.k8s.io "nhc-controller-lease-namespace-guard" deleted`,
		`customresourcedefinition.apiextensions.k8s.io "nodehealthchecks.remediation.medik8s.io" deleted`} {
		assert.Contains(t, out, deleted)
	}
	leaseNamespaceKept(t)

	// With the guard gone, the namespace can be deleted as any other.
	framework.Eventually(t, 30*time.Second, "the lease namespace deletable once nhc-controller is gone", func() bool {
		_, err := env.Cluster.Kubectl("delete", "namespace", remediation.DefaultLeaseNamespace, "--dry-run=server")
		return err == nil
	})
}
