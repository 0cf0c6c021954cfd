package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// AssertTheLeaseScopeHolds checks, as the installed controller's
// ServiceAccount with its cluster-wide lease grant, what the node lease
// scope policy leaves it: leases in the lease namespace, none in
// kube-node-lease, and no namespace to create but the lease namespace.
// Every write is a server-side dry run, which admission judges as any. The
// lease namespace must exist; kube-node-lease is the API server's own.
func (e *Env) AssertTheLeaseScopeHolds(t *testing.T) {
	t.Helper()
	kubeconfig, err := e.Cluster.UserKubeconfig("system:serviceaccount:"+InstallNamespace+":nhc-controller",
		"system:serviceaccounts", "system:serviceaccounts:"+InstallNamespace, "system:authenticated")
	require.NoError(t, err)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-scope-probe"}}
	// The API server loads a new policy within a second or so.
	Eventually(t, 30*time.Second, "the node lease scope in force", func() bool {
		_, err := client.CoordinationV1().Leases("kube-node-lease").Create(t.Context(), lease, dryRun)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(),
			"nhc-controller writes leases only in namespaces medik8s-leases and "+InstallNamespace+", not in kube-node-lease")
	})
	_, err = client.CoordinationV1().Leases(nodeleases.DefaultNamespace).Create(t.Context(), lease, dryRun)
	assert.NoError(t, err, "a node lease in the lease namespace")
	_, err = client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-scope-probe"}}, dryRun)
	require.Error(t, err, "no namespace but the lease namespace")
	assert.Contains(t, err.Error(), "nhc-controller creates no namespace but the node lease namespace medik8s-leases")
}
