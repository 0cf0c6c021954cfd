package nodeleases

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// accessFixture is a fake API server where leases in the lease namespace
// may be listed once the lease holder role is bound there, as by RBAC.
func accessFixture(t *testing.T, user string, objects ...runtime.Object) *kubefake.Clientset {
	t.Helper()
	client := kubefake.NewClientset(objects...)
	client.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: user}}}, nil
	})
	client.PrependReactor("list", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		_, err := client.Tracker().Get(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, action.GetNamespace(), DefaultRole)
		if apierrors.IsNotFound(err) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", nil)
		}
		return false, nil, nil
	})
	return client
}

func holderRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: DefaultRole, UID: "role-uid"}}
}

func TestAccessBindsTheHolderRoleInTheLeaseNamespaceAlone(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		subject rbacv1.Subject
	}{
		{"a ServiceAccount", "system:serviceaccount:nhc-system:nhc-controller",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "nhc-system", Name: "nhc-controller"}},
		{"a user", "alice", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := accessFixture(t, tt.user, holderRole())
			require.NoError(t, NewAccess(fakeAccessClients(client), DefaultNamespace, DefaultRole).Ensure(context.Background()))
			_, err := client.CoreV1().Namespaces().Get(context.Background(), DefaultNamespace, metav1.GetOptions{})
			assert.NoError(t, err, "the lease namespace created")
			binding, err := client.RbacV1().RoleBindings(DefaultNamespace).Get(context.Background(), DefaultRole, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: DefaultRole}, binding.RoleRef)
			assert.Equal(t, []rbacv1.Subject{tt.subject}, binding.Subjects)
			require.Len(t, binding.OwnerReferences, 1, "deleted with the role")
			assert.Equal(t, "role-uid", string(binding.OwnerReferences[0].UID))
		})
	}
}

func TestAccessChangesNothingWhereLeasesCanBeListed(t *testing.T) {
	client := kubefake.NewClientset(holderRole())
	require.NoError(t, NewAccess(fakeAccessClients(client), DefaultNamespace, DefaultRole).Ensure(context.Background()))
	bindings, err := client.RbacV1().RoleBindings("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, bindings.Items)
}

func TestAccessWithoutARoleSaysLeasesAreForbidden(t *testing.T) {
	client := accessFixture(t, "alice")
	err := NewAccess(fakeAccessClients(client), DefaultNamespace, "").Ensure(context.Background())
	assert.True(t, apierrors.IsForbidden(err), "got %v", err)
}

// fakeAccessClients are Access's clients on a fake clientset.
func fakeAccessClients(client *kubefake.Clientset) AccessClients {
	return AccessClients{
		Namespaces: client.CoreV1().Namespaces(), Leases: client.CoordinationV1().Leases(DefaultNamespace),
		SelfSubjectReviews: client.AuthenticationV1().SelfSubjectReviews(), ClusterRoles: client.RbacV1().ClusterRoles(),
		RoleBindings: client.RbacV1().RoleBindings(DefaultNamespace),
	}
}
