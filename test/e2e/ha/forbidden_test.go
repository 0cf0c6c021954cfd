package ha

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// grant binds a ClusterRole with these rules to a user, for the test.
func grant(t *testing.T, user, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	_, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.RbacV1().ClusterRoleBindings().Delete(t.Context(), name, metav1.DeleteOptions{})
		_ = env.Kube.RbacV1().ClusterRoles().Delete(t.Context(), name, metav1.DeleteOptions{})
	})
}

// controllerRules are what the controller needs besides a remediator's
// templates and remediation resources, without leader election. (Node leases
// are granted cluster-wide here for brevity; the manifests grant them in
// their namespace alone.)
func controllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"nodehealthchecks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"nodehealthchecks/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	}
}

// TestARemediationKindThatCannotBeWatchedDisables runs the controller with
// every right but list and watch on the remediation kind: the
// NodeHealthCheck says which permission is missing, instead of waiting
// forever with no status, no event and no remediation.
func TestARemediationKindThatCannotBeWatchedDisables(t *testing.T) {
	const user, scenario = "limited-controller", "forbidden"
	grant(t, user, "limited-controller-base", append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get", "list", "watch"}})...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartControllerWithKubeconfig(scenario, kubeconfig, "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()

	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the NodeHealthCheck disabled with the missing permission", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.Phase == v1alpha1.PhaseDisabled &&
			strings.Contains(s.Reason, "Remediation resources testremediations.test.medik8s.io cannot be watched") &&
			strings.Contains(s.Reason, "Grant get, list, watch, create, update, patch and delete on testremediations.test.medik8s.io")
	})
	assert.Empty(t, env.Remediations(t, scenario))

	grant(t, user, "limited-controller-remediations",
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})
	framework.Eventually(t, 60*time.Second, "the remediation, once granted", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	framework.Eventually(t, 10*time.Second, "the NodeHealthCheck enabled again", func() bool {
		return env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})
}

// A remediation kind the controller may not watch is retried with a
// backoff, and each retry that fails again wakes the NodeHealthChecks that
// use the kind alone: a bystander using another kind is not synced for it.
func TestAForbiddenKindsRetriesWakeOnlyItsUsers(t *testing.T) {
	const user, window = "retrying-controller", 50 * time.Second
	grant(t, user, "retrying-controller-base", append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"clusterremediationtemplates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"clusterremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	env.CreateTemplate(t, "forbidden-kind", nil)
	env.CreateNHC(t, "forbidden-kind", nil)
	bystanderTemplate := env.CreateClusterTemplate(t, "bystander")
	env.CreateNHC(t, "bystander", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &bystanderTemplate })
	c, err := env.StartControllerWithKubeconfig("forbidden-retries", kubeconfig, "--leader-elect=false", "--node-leases=false", "--v=2")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	framework.Eventually(t, 30*time.Second, "the forbidden kind's NodeHealthCheck disabled, the bystander enabled", func() bool {
		return env.GetNHC(t, "forbidden-kind").Status.Phase == v1alpha1.PhaseDisabled && env.GetNHC(t, "bystander").Status.Phase == v1alpha1.PhaseEnabled
	})

	// A sync logs "Synced", or "Cannot evaluate" while a kind cannot be read.
	syncs := func(nhc string) int {
		log := c.Log()
		return strings.Count(log, `"Synced" nodeHealthCheck="`+nhc+`"`) + strings.Count(log, `"Cannot evaluate" nodeHealthCheck="`+nhc+`"`)
	}
	users, bystanders := syncs("forbidden-kind"), syncs("bystander")
	time.Sleep(window)
	users, bystanders = syncs("forbidden-kind")-users, syncs("bystander")-bystanders
	t.Logf("in %v: %d syncs of the kind's user, %d of the bystander", window, users, bystanders)
	assert.GreaterOrEqual(t, users, 2, "the kind is retried, and its user woken")
	assert.LessOrEqual(t, bystanders, 1, "the bystander is not woken by the kind's retries")
}
