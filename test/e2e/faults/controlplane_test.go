package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	clusterTemplateResource    = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	clusterRemediationResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
)

// clusterRemediationsOf counts the ClusterRemediations of a node.
func clusterRemediationsOf(t *testing.T, node string) int {
	list, err := env.Dynamic.Resource(clusterRemediationResource).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	count := 0
	for _, r := range list.Items {
		if remediation.NodeOf(&r) == node {
			count++
		}
	}
	return count
}

// TestAControlPlaneRemediationOfAKindNotReadYetHoldsBackAnother: NHC X (the
// test remediator) and NHC Y (the cluster-scoped one) each select a
// control-plane node. Y remediates its node; the controller is killed, X's
// node fails, and the controller starts again while the API server does not
// answer its reads of Y's remediation kind. X's kind is read, Y's is not:
// X's node must wait until the controller can show that no other
// control-plane node is under remediation, and then until Y's remediation
// ends.
func TestAControlPlaneRemediationOfAKindNotReadYetHoldsBackAnother(t *testing.T) {
	const scenarioX, scenarioY = "cp-unread-x", "cp-unread-y"
	env.CreateTemplate(t, scenarioX, nil)
	_, err := env.Dynamic.Resource(clusterTemplateResource).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": scenarioY},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"agent": "ipmi"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(clusterTemplateResource).Delete(context.Background(), scenarioY, metav1.DeleteOptions{})
	})
	fence := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: scenarioY}
	nodeX := env.CreateNodes(t, scenarioX, 1, framework.ControlPlane)[0]
	nodeY := env.CreateNodes(t, scenarioY, 1, framework.ControlPlane)[0]
	env.CreateNHC(t, scenarioX, nil)
	env.CreateNHC(t, scenarioY, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &fence })
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(clusterRemediationResource).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})

	first, err := env.StartControllerWithKubeconfig(scenarioX+"-first", proxy.Kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	env.Fail(t, time.Hour, nodeY)
	framework.Eventually(t, 20*time.Second, "the first control-plane node's remediation", func() bool { return clusterRemediationsOf(t, nodeY) == 1 })
	first.Kill()

	proxy.HoldReads("/"+clusterRemediationResource.Resource, true)
	t.Cleanup(func() { proxy.HoldReads("/"+clusterRemediationResource.Resource, false) })
	env.Fail(t, time.Hour, nodeX)
	startController(t, scenarioX+"-second")
	framework.Eventually(t, 20*time.Second, "the second control-plane node to wait, and say why", func() bool {
		for _, e := range env.Events(t, scenarioX) {
			if e.Reason == "RemediationSkipped" && strings.Contains(e.Message, "not every control-plane remediation is known yet") {
				return true
			}
		}
		return false
	})
	assert.Empty(t, env.Remediations(t, scenarioX), "never two control-plane nodes under remediation")

	proxy.HoldReads("/"+clusterRemediationResource.Resource, false)
	framework.Consistently(t, 3*time.Second, "still one at a time once every kind is read", func() bool {
		return len(env.Remediations(t, scenarioX)) == 0
	})
	env.Recover(t, nodeY)
	framework.Eventually(t, 20*time.Second, "then the second control-plane node's turn", func() bool {
		return clusterRemediationsOf(t, nodeY) == 0 && len(env.Remediations(t, scenarioX)[nodeX]) == 1
	})
}
