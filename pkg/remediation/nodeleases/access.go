package nodeleases

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
)

// DefaultRole is the ClusterRole with the rights on node leases that the
// controller binds to itself in the lease namespace.
const DefaultRole = "nhc-controller-node-lease-holder"

// serviceAccountPrefix begins the user name of a ServiceAccount's token.
const serviceAccountPrefix = "system:serviceaccount:"

// Access gives the controller its rights on leases in the lease namespace
// alone. RBAC cannot grant a namespace before it exists, and the lease
// namespace is not part of the install, so the controller creates it when
// missing and binds the lease holder ClusterRole to itself there: it never
// needs to read leases anywhere else.
type Access struct {
	client    AccessClients
	namespace string
	// role is the ClusterRole bound in the namespace; "" binds none, for
	// installs that grant leases there themselves.
	role string
}

// AccessClients are the requests Access sends, each through a kubeclient
// client or a clientset's.
type AccessClients struct {
	Namespaces interface {
		Create(ctx context.Context, ns *corev1.Namespace, opts metav1.CreateOptions) (*corev1.Namespace, error)
	}
	// Leases are the lease namespace's.
	Leases interface {
		List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error)
	}
	SelfSubjectReviews interface {
		Create(ctx context.Context, review *authenticationv1.SelfSubjectReview, opts metav1.CreateOptions) (*authenticationv1.SelfSubjectReview, error)
	}
	ClusterRoles interface {
		Get(ctx context.Context, name string, opts metav1.GetOptions) (*rbacv1.ClusterRole, error)
	}
	// RoleBindings are the lease namespace's.
	RoleBindings interface {
		Create(ctx context.Context, binding *rbacv1.RoleBinding, opts metav1.CreateOptions) (*rbacv1.RoleBinding, error)
	}
}

// NewAccess returns the access to leases of namespace through role.
func NewAccess(client AccessClients, namespace, role string) *Access {
	return &Access{client: client, namespace: namespace, role: role}
}

// Ensure creates the lease namespace when it is missing, as upstream does,
// and binds the role there unless leases there can be listed already.
func (a *Access) Ensure(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.namespace}}
	_, err := a.client.Namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating the lease namespace %s: %w", a.namespace, err)
	}
	// A namespace the controller may not create may exist already: the
	// list tells.
	_, err = a.client.Leases.List(ctx, metav1.ListOptions{Limit: 1})
	if err == nil || !apierrors.IsForbidden(err) || a.role == "" {
		return err
	}
	if err := a.bind(ctx); err != nil {
		return fmt.Errorf("binding ClusterRole %s in namespace %s: %w", a.role, a.namespace, err)
	}
	_, err = a.client.Leases.List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// bind creates the RoleBinding of the role to the controller's own user in
// the lease namespace, owned by the role: uninstalling deletes the role, and
// the garbage collector the binding, while the namespace stays.
func (a *Access) bind(ctx context.Context) error {
	review, err := a.client.SelfSubjectReviews.Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the API server who the controller is: %w", err)
	}
	role, err := a.client.ClusterRoles.Get(ctx, a.role, metav1.GetOptions{})
	if err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.role, Namespace: a.namespace,
			Labels:          map[string]string{"app.kubernetes.io/name": "nhc-controller"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID}},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: a.role},
		Subjects: []rbacv1.Subject{subjectOf(review.Status.UserInfo.Username)},
	}
	_, err = a.client.RoleBindings.Create(ctx, binding, metav1.CreateOptions{FieldManager: v1alpha1.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// subjectOf is the RBAC subject of a user name: a ServiceAccount for a
// ServiceAccount's token, else a user.
func subjectOf(username string) rbacv1.Subject {
	if rest, ok := strings.CutPrefix(username, serviceAccountPrefix); ok {
		if namespace, name, ok := strings.Cut(rest, ":"); ok {
			return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
		}
	}
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: username}
}

// accessRetry paces Start's retries: a missing right is fixed by someone,
// not soon.
var accessRetry = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: time.Minute}

// Start calls Ensure once, and when that fails, again in the background
// until it succeeds or ctx ends, logging each failure. Until then node
// leases are reported unreadable on every NodeHealthCheck.
func (a *Access) Start(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ensured := func(ctx context.Context) (bool, error) {
		err := a.Ensure(ctx)
		if err != nil {
			logger.Error(err, "Node leases are out of reach", "namespace", a.namespace, "role", a.role)
		}
		return err == nil, nil
	}
	if done, _ := ensured(ctx); !done {
		go func() { _ = wait.ExponentialBackoffWithContext(ctx, accessRetry, ensured) }()
	}
}

// AccessClientsOf are the clients of Access in namespace, from a
// kubeclient's.
func AccessClientsOf(c *kubeclient.Clients, namespace string) AccessClients {
	return AccessClients{Namespaces: c.Namespaces(), Leases: c.Leases(namespace), SelfSubjectReviews: c.SelfSubjectReviews(), ClusterRoles: c.ClusterRoles(), RoleBindings: c.RoleBindings(namespace)}
}
