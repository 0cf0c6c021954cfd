package ha

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var clusterTemplateResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}

// TestOneBrokenRemediatorStopsNoOtherControlPlaneRemediation: one
// NodeHealthCheck's remediation kind may not be listed (its remediator's
// role is gone, its CRDs stay). That NodeHealthCheck is disabled and says
// why; the control-plane nodes of another NodeHealthCheck are still
// remediated, one at a time, instead of waiting for ever because not every
// control-plane remediation can be known.
func TestOneBrokenRemediatorStopsNoOtherControlPlaneRemediation(t *testing.T) {
	const user, broken, scenario = "controller-one-broken-remediator", "broken-remediator", "healthy-remediator"
	grant(t, user, "one-broken-remediator", append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates", "clusterremediationtemplates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	_, err = env.Dynamic.Resource(clusterTemplateResource).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": broken},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(clusterTemplateResource).Delete(context.Background(), broken, metav1.DeleteOptions{})
	})
	env.CreateNodes(t, broken, 2)
	env.CreateNHC(t, broken, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = &corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Name: broken}
	})
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3, framework.ControlPlane)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartControllerWithKubeconfig(scenario, kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()

	framework.Eventually(t, 30*time.Second, "the broken one disabled, naming the kind", func() bool {
		s := env.GetNHC(t, broken).Status
		return s.Phase == v1alpha1.PhaseDisabled &&
			strings.Contains(s.Reason, "Remediation resources clusterremediations.test.medik8s.io cannot be watched or written") &&
			strings.Contains(s.Reason, `cannot list resource "clusterremediations"`)
	})
	env.Fail(t, 2*time.Hour, nodes[0])
	env.Fail(t, time.Hour, nodes[1])
	framework.Eventually(t, 30*time.Second, "the control-plane node unhealthy longer remediated", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	framework.Consistently(t, 2*time.Second, "one control-plane node at a time", func() bool {
		r := env.Remediations(t, scenario)
		return len(r) == 1 && len(r[nodes[0]]) == 1
	})
	assert.Equal(t, v1alpha1.PhaseDisabled, env.GetNHC(t, broken).Status.Phase, "the broken one stays disabled")
}

// TestAControlPlaneRemediationOfAKindForbiddenSinceARestartHoldsTheOthers:
// a control-plane node is under remediation of one kind when the
// controller restarts without the right to read that kind (its
// remediator's role removed meanwhile). The new process cannot see the
// resource; its NodeHealthCheck's status, which records it, keeps the node
// under remediation: no second control-plane node starts.
func TestAControlPlaneRemediationOfAKindForbiddenSinceARestartHoldsTheOthers(t *testing.T) {
	const user, fencing, scenario = "controller-forbidden-since-restart", "fenced-before", "after-restart"
	fence := env.CreateClusterTemplate(t, fencing)
	fenced := env.CreateNodes(t, fencing, 1, framework.ControlPlane)[0]
	env.CreateNHC(t, fencing, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &fence })
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2, framework.ControlPlane)
	env.CreateNHC(t, scenario, nil)

	before, err := env.StartController(fencing, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, before)
	env.Fail(t, 2*time.Hour, fenced)
	framework.Eventually(t, 30*time.Second, "the first control-plane node fenced, and on record", func() bool {
		s := env.GetNHC(t, fencing).Status
		return len(env.ClusterRemediations(t, fenced)) == 1 && len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 1
	})
	require.NoError(t, before.Stop())

	grant(t, user, user, append(controllerRules(),
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediationtemplates", "clusterremediationtemplates"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"test.medik8s.io"}, Resources: []string{"testremediations"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})...)
	kubeconfig, err := env.Cluster.UserKubeconfig(user, "system:authenticated")
	require.NoError(t, err)
	after, err := env.StartControllerWithKubeconfig(scenario, kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, after)
	defer func() { assert.NoError(t, after.Stop()) }()
	framework.Eventually(t, 30*time.Second, "the fencing NodeHealthCheck disabled, naming the kind", func() bool {
		return env.GetNHC(t, fencing).Status.Phase == v1alpha1.PhaseDisabled
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "the other control-plane node to wait for the fenced one, and say so", func() bool {
		for _, e := range env.Events(t, scenario) {
			// Upstream's words for another control-plane node under
			// remediation; before every kind is known, they say so instead.
			if e.Reason == "RemediationSkipped" && strings.Contains(e.Message, "etcd quorum loss, going to retry in a minute") {
				return true
			}
		}
		return false
	})
	framework.Consistently(t, 3*time.Second, "never two control-plane nodes under remediation", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
}
