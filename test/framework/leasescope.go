package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// AssertTheLeaseScopeHolds checks, as the installed controller's
// ServiceAccount, after it has run: that it bound the lease holder role to
// itself in the lease namespace, owned by the role, and may use leases there
// and nowhere else, kube-node-lease included; and what the node lease scope
// policy leaves it: no other RoleBinding and no namespace to create but the
// lease namespace. Every write is a server-side dry run, which RBAC and
// admission judge as any. The lease namespace must exist; kube-node-lease
// is the API server's own.
func (e *Env) AssertTheLeaseScopeHolds(t *testing.T) {
	t.Helper()
	binding, err := e.Kube.RbacV1().RoleBindings(nodeleases.DefaultNamespace).Get(t.Context(), nodeleases.DefaultRole, metav1.GetOptions{})
	require.NoError(t, err, "the controller binds the lease holder role in the lease namespace")
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nhc-controller", Namespace: InstallNamespace}}, binding.Subjects)
	if assert.Len(t, binding.OwnerReferences, 1) {
		assert.Equal(t, "ClusterRole", binding.OwnerReferences[0].Kind, "uninstalling deletes the binding with the role")
	}

	kubeconfig, err := e.Cluster.UserKubeconfig("system:serviceaccount:"+InstallNamespace+":nhc-controller",
		"system:serviceaccounts", "system:serviceaccounts:"+InstallNamespace, "system:authenticated")
	require.NoError(t, err)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-scope-probe"}}
	_, err = client.CoordinationV1().Leases(nodeleases.DefaultNamespace).Create(t.Context(), lease, dryRun)
	assert.NoError(t, err, "a node lease in the lease namespace")
	_, err = client.CoordinationV1().Leases(nodeleases.DefaultNamespace).List(t.Context(), metav1.ListOptions{})
	assert.NoError(t, err, "node leases read in the lease namespace")
	for _, namespace := range []string{"kube-node-lease", metav1.NamespaceDefault, ""} {
		_, err = client.CoordinationV1().Leases(namespace).List(t.Context(), metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "no lease read in namespace %q: %v", namespace, err)
	}
	_, err = client.CoordinationV1().Leases("kube-node-lease").Create(t.Context(), lease, dryRun)
	assert.True(t, apierrors.IsForbidden(err), "no lease written in kube-node-lease: %v", err)

	// The API server loads a new policy within a second or so.
	elsewhere := binding.DeepCopy()
	elsewhere.ObjectMeta = metav1.ObjectMeta{Name: nodeleases.DefaultRole, Namespace: "kube-node-lease"}
	Eventually(t, 30*time.Second, "the node lease scope in force", func() bool {
		_, err := client.RbacV1().RoleBindings(elsewhere.Namespace).Create(t.Context(), elsewhere, dryRun)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(),
			"nhc-controller binds only nhc-controller-node-lease-holder to itself, in namespace medik8s-leases")
	})
	toSomeoneElse := binding.DeepCopy()
	toSomeoneElse.ObjectMeta = metav1.ObjectMeta{Name: "lease-scope-probe", Namespace: nodeleases.DefaultNamespace}
	toSomeoneElse.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}
	_, err = client.RbacV1().RoleBindings(nodeleases.DefaultNamespace).Create(t.Context(), toSomeoneElse, dryRun)
	assert.True(t, apierrors.IsForbidden(err), "the lease holder role bound to no one else: %v", err)
	second := binding.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Name: "lease-scope-second", Namespace: nodeleases.DefaultNamespace}
	_, err = client.RbacV1().RoleBindings(nodeleases.DefaultNamespace).Create(t.Context(), second, dryRun)
	assert.True(t, apierrors.IsForbidden(err), "no second binding of the holder role, which would outlive uninstalling: %v", err)
	_, err = client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lease-scope-probe"}}, dryRun)
	require.Error(t, err, "no namespace but the lease namespace")
	assert.Contains(t, err.Error(), "nhc-controller creates no namespace but the node lease namespace medik8s-leases")
}
