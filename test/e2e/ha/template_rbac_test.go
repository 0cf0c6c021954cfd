package ha

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// templateCacheTime is how long the controller uses a template it could only
// read with GET (pkg/remediation's getCacheTime), plus a margin for the sync.
const templateCacheTime = 30*time.Second + 10*time.Second

// remediationRules are the full rights on the test remediation kind that a
// remediator's aggregated role grants.
var remediationRules = rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"},
	Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}

// startLimitedController runs the controller as a user with the controller's
// own rights, full rights on the remediation kind, and these rules.
func startLimitedController(t *testing.T, user string, rules ...rbacv1.PolicyRule) *framework.Controller {
	t.Helper()
	grant(t, user, user, append(controllerRules(), append(rules, remediationRules)...)...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	c, err := env.StartControllerWithKubeconfig(user, kubeconfig, "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	t.Cleanup(func() { assert.NoError(t, c.Stop()) })
	return c
}

// forbiddenListsOfTemplates counts the controller's log lines of a template
// informer that may not list.
func forbiddenListsOfTemplates(c *framework.Controller) int {
	n := 0
	for _, line := range strings.Split(c.Log(), "\n") {
		if strings.Contains(line, "Failed to watch") && strings.Contains(line, "testremediationtemplates") {
			n++
		}
	}
	return n
}

// TestTemplatesReadableOnlyWithGet runs the controller with the spec's
// aggregated role, which grants only get on templates: it remediates, stops
// retrying the template informer, and sees a deleted template within the
// cache time.
func TestTemplatesReadableOnlyWithGet(t *testing.T) {
	const scenario = "template-get-only"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	c := startLimitedController(t, "template-get-only-controller",
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get"}})

	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the remediation, the NodeHealthCheck not disabled", func() bool {
		status := env.GetNHC(t, scenario).Status
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && status.Phase == v1alpha1.PhaseRemediating &&
			meta.IsStatusConditionFalse(status.Conditions, v1alpha1.ConditionDisabled)
	})
	failedLists := forbiddenListsOfTemplates(c)

	require.NoError(t, env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Delete(t.Context(), scenario, metav1.DeleteOptions{}))
	framework.Eventually(t, templateCacheTime, "the deleted template noticed within the cache time", func() bool {
		disabled := meta.FindStatusCondition(env.GetNHC(t, scenario).Status.Conditions, v1alpha1.ConditionDisabled)
		return disabled != nil && disabled.Status == metav1.ConditionTrue && disabled.Reason == v1alpha1.ReasonTemplateNotFound &&
			disabled.Message == "Remediation template TestRemediationTemplate remediators/"+scenario+" not found: failed to get external remediation template remediators/"+scenario
	})
	assert.Equal(t, failedLists, forbiddenListsOfTemplates(c), "the forbidden template informer was stopped, not retried")
}

// TestTemplatesNotReadableDisable runs the controller with no right on
// templates: the NodeHealthCheck says to grant get, and a grant of get alone
// is enough.
func TestTemplatesNotReadableDisable(t *testing.T) {
	const scenario, user = "template-no-rights", "template-no-rights-controller"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	startLimitedController(t, user)

	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the NodeHealthCheck disabled with the missing permission", func() bool {
		disabled := meta.FindStatusCondition(env.GetNHC(t, scenario).Status.Conditions, v1alpha1.ConditionDisabled)
		return disabled != nil && disabled.Status == metav1.ConditionTrue && disabled.Reason == v1alpha1.ReasonTemplateNotFound &&
			strings.HasPrefix(disabled.Message, "Remediation template TestRemediationTemplate remediators/"+scenario+" cannot be read: ") &&
			strings.Contains(disabled.Message, `cannot get resource "testremediationtemplates"`) &&
			strings.Contains(disabled.Message, "Grant get on testremediationtemplates.test.medik8s.io")
	})
	assert.Empty(t, env.Remediations(t, scenario))

	grant(t, user, user+"-templates",
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates"}, Verbs: []string{"get"}})
	framework.Eventually(t, 30*time.Second, "the remediation once get is granted, the NodeHealthCheck enabled", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})
}
