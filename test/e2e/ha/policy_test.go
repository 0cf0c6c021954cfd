package ha

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestThePolicyLetsTheControllerOnlyRemoveTheConfirmation applies the
// node patch guard of the default install: the controller's ServiceAccount may remove the
// manual confirmation from a Node and change nothing else, while an admin
// may change anything.
func TestThePolicyLetsTheControllerOnlyRemoveTheConfirmation(t *testing.T) {
	const serviceAccount = "system:serviceaccount:nhc-system:nhc-controller"
	guard := filepath.Join(controlplane.RepoRoot(), "manifests/admission/node-patch-guard.yaml")
	out, err := env.Cluster.Kubectl("apply", "-f", guard)
	require.NoError(t, err, out)
	t.Cleanup(func() {
		_, _ = env.Cluster.Kubectl("delete", "-f", guard)
	})
	grant(t, serviceAccount, "policy-test-node-patch",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch", "update"}})
	kubeconfig, err := env.Cluster.UserKubeconfig(serviceAccount, "system:serviceaccounts", "system:authenticated")
	require.NoError(t, err)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	controller := kubernetes.NewForConfigOrDie(config)

	node := env.CreateNode(t, "policy", "policy-node").Name
	confirm := func() {
		env.UpdateNode(t, node, func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: "yes", "other": "kept"}
		})
	}
	confirm()
	patch := func(client kubernetes.Interface, body string) error {
		_, err := client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	denied := map[string]string{
		"a label":                     `{"metadata":{"labels":{"role":"changed"}}}`,
		"another annotation":          `{"metadata":{"annotations":{"other":"changed"}}}`,
		"the confirmation added":      `{"metadata":{"annotations":{"remediation.medik8s.io/manually-confirmed-healthy":"again"}}}`,
		"cordoning":                   `{"spec":{"unschedulable":true}}`,
		"a taint":                     `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`,
		"removing another annotation": `{"metadata":{"annotations":{"other":null}}}`,
	}
	framework.Eventually(t, 30*time.Second, "the policy to be enforced", func() bool {
		return patch(controller, denied["a label"]) != nil
	})
	for what, body := range denied {
		err := patch(controller, body)
		require.Error(t, err, "the controller may not change %s", what)
		assert.Contains(t, err.Error(), "nhc-controller may", what)
	}

	require.NoError(t, patch(controller, `{"metadata":{"annotations":{"remediation.medik8s.io/manually-confirmed-healthy":null}}}`),
		"removing the confirmation is allowed")
	stored, err := env.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"other": "kept"}, stored.Annotations)

	confirm()
	for what, body := range denied {
		assert.NoError(t, patch(env.Kube, body), "an admin may change %s", what)
	}
}

// TestOnlyClusterAdminsManageNodeHealthChecks checks the roles the manifests
// aggregate: a NodeHealthCheck can reboot any node, so namespace admins and
// editors may read but not write them; the editor role must be bound on
// purpose.
func TestOnlyClusterAdminsManageNodeHealthChecks(t *testing.T) {
	out, err := env.Cluster.Kubectl("apply", "-f", filepath.Join(controlplane.RepoRoot(), "manifests/crd"), "-f", filepath.Join(controlplane.RepoRoot(), "manifests/deploy/namespace.yaml"))
	require.NoError(t, err, out)
	out, err = env.Cluster.Kubectl("apply", "-f", filepath.Join(controlplane.RepoRoot(), "manifests/rbac"))
	require.NoError(t, err, out)
	// view is aggregated into edit, and edit into admin: in that order.
	for _, role := range []string{"view", "edit", "admin"} {
		env.AggregateClusterRoles(t, role)
	}
	bind := func(user, role string) {
		_, err := env.Kube.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		})
	}
	bind("an-admin", "admin")
	bind("an-editor", "edit")
	bind("a-viewer", "view")
	bind("an-nhc-editor", "nhc-controller-nodehealthcheck-editor")
	allowed := func(user, verb string) bool {
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: v1alpha1.SchemeGroupVersion.Group, Resource: "nodehealthchecks", Verb: verb}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return review.Status.Allowed
	}
	for _, user := range []string{"an-admin", "an-editor", "a-viewer"} {
		assert.True(t, allowed(user, "list"), "%s may read NodeHealthChecks", user)
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			assert.False(t, allowed(user, verb), "%s may not %s NodeHealthChecks", user, verb)
		}
	}
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		assert.True(t, allowed("an-nhc-editor", verb), "the editor role, bound on purpose, may %s", verb)
	}
}
