package ha

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// right is one thing the controller's ServiceAccount may or may not do.
type right struct {
	group, resource, verb, namespace, name string
	// usedBy says which code needs it; empty for a right not granted.
	usedBy string
}

// grantedRights are every right the install grants the controller's
// ServiceAccount, besides what remediators aggregate, each with the code
// that uses it.
var grantedRights = []right{
	{group: "remediation.medik8s.io", resource: "nodehealthchecks", verb: "list", usedBy: "the NodeHealthCheck informer; controller.clientNHCs.Metadata"},
	{group: "remediation.medik8s.io", resource: "nodehealthchecks", verb: "watch", usedBy: "the NodeHealthCheck informer"},
	{group: "remediation.medik8s.io", resource: "nodehealthchecks/status", verb: "update", usedBy: "controller.clientNHCs.UpdateStatus"},
	{group: "remediation.medik8s.io", resource: "nodehealthchecks/status", verb: "patch", usedBy: "controller.clientNHCs.PatchStatus"},
	{resource: "nodes", verb: "list", usedBy: "nodecache: the informer, Versions, Node"},
	{resource: "nodes", verb: "watch", usedBy: "nodecache: the paced watch"},
	{resource: "nodes", verb: "patch", usedBy: "remediation.Client: removing the manual confirmation"},
	{resource: "events", verb: "create", namespace: "default", usedBy: "the event recorder, on NodeHealthChecks"},
	{resource: "events", verb: "patch", namespace: "default", usedBy: "the event recorder, counting repeats"},
	{group: "authentication.k8s.io", resource: "tokenreviews", verb: "create", usedBy: "the metrics port's delegatedAuth"},
	{group: "authorization.k8s.io", resource: "subjectaccessreviews", verb: "create", usedBy: "the metrics port's delegatedAuth"},
	{group: "authorization.k8s.io", resource: "selfsubjectaccessreviews", verb: "create", usedBy: "remediation.Writer.checkAccess: a 403 the role's or admission's"},
	{group: "coordination.k8s.io", resource: "leases", verb: "get", namespace: "nhc-system", usedBy: "leader election"},
	{group: "coordination.k8s.io", resource: "leases", verb: "create", namespace: "nhc-system", usedBy: "leader election"},
	{group: "coordination.k8s.io", resource: "leases", verb: "update", namespace: "nhc-system", usedBy: "leader election"},
	{group: "coordination.k8s.io", resource: "leases", verb: "get", namespace: "medik8s-leases", usedBy: "nodeleases: a lease the informer is behind on, after a write it made conflicted"},
	{group: "coordination.k8s.io", resource: "leases", verb: "list", namespace: "medik8s-leases", usedBy: "nodeleases: the informer, access checks"},
	{group: "coordination.k8s.io", resource: "leases", verb: "watch", namespace: "medik8s-leases", usedBy: "nodeleases: the informer"},
	{group: "coordination.k8s.io", resource: "leases", verb: "create", namespace: "medik8s-leases", usedBy: "nodeleases: taking a node's lease"},
	{group: "coordination.k8s.io", resource: "leases", verb: "update", namespace: "medik8s-leases", usedBy: "nodeleases: renewing, taking over"},
	{group: "coordination.k8s.io", resource: "leases", verb: "delete", namespace: "medik8s-leases", usedBy: "nodeleases: releasing"},
	{resource: "namespaces", verb: "create", usedBy: "nodeleases.access: the lease namespace, when missing"},
	{group: "rbac.authorization.k8s.io", resource: "rolebindings", verb: "create", namespace: "medik8s-leases", usedBy: "nodeleases.access: binding the holder role"},
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "get", name: "nhc-controller-node-lease-holder", usedBy: "nodeleases.access: the binding's owner"},
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "bind", name: "nhc-controller-node-lease-holder", usedBy: "nodeleases.access: binding the holder role"},
}

// withheldRights are rights an install once granted, or could, and no code
// uses: they stay withheld.
var withheldRights = []right{
	{resource: "nodes", verb: "get"},
	{group: "remediation.medik8s.io", resource: "nodehealthchecks", verb: "get"},
	{resource: "events", verb: "create", namespace: "kube-system"},
	{resource: "events", verb: "create", namespace: "nhc-system"},
	{group: "coordination.k8s.io", resource: "leases", verb: "update", namespace: "kube-node-lease"},
	{resource: "nodes", verb: "update"},
	{resource: "nodes", verb: "delete"},
	{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "bind", name: "cluster-admin"},
}

// assertRightsAsListed checks, on the API server, that the install grants
// the controller's ServiceAccount every right of grantedRights and none of
// withheldRights.
func assertRightsAsListed(t *testing.T) {
	t.Helper()
	const user = "system:serviceaccount:nhc-system:nhc-controller"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:nhc-system", "system:authenticated"}
	allowed := func(r right) bool {
		review, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: r.group, Resource: r.resource, Verb: r.verb, Namespace: r.namespace, Name: r.name,
			}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return review.Status.Allowed
	}
	for _, r := range grantedRights {
		assert.True(t, allowed(r), "%s %s/%s in %q: used by %s", r.verb, r.group, r.resource, r.namespace, r.usedBy)
	}
	for _, r := range withheldRights {
		assert.False(t, allowed(r), "%s %s/%s in %q: no code uses it", r.verb, r.group, r.resource, r.namespace)
	}
}
