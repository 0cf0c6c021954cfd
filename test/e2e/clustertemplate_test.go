package e2e

import (
	"context"
	"testing"
	"time"

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

// TestACreatedClusterScopedTemplateWakesItsNodeHealthCheck: the reference to
// a cluster-scoped template carries a namespace, as the spec requires; the
// template, which has none, wakes the NodeHealthCheck that waited for it
// when it is created, and its unhealthy node is remediated at once, not
// when something else happens to wake the NodeHealthCheck.
func TestACreatedClusterScopedTemplateWakesItsNodeHealthCheck(t *testing.T) {
	t.Parallel()
	const scenario = "cluster-template-later"
	ref := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: scenario}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &ref })
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(clusterTemplateResource).Delete(context.Background(), scenario, metav1.DeleteOptions{})
		_ = env.Dynamic.Resource(clusterRemediationResource).DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: "metadata.name=" + nodes[0]})
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "disabled: the template does not exist", func() bool {
		return statusOf(t, scenario).Phase == v1alpha1.PhaseDisabled
	})
	// Past the sync that disabled it and any follow-up it asked for.
	time.Sleep(2 * time.Second)

	_, err := env.Dynamic.Resource(clusterTemplateResource).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": scenario},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"agent": "ipmi"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	framework.Eventually(t, 3*time.Second, "the node remediated once the template exists", func() bool {
		return clusterRemediationsOf(t, nodes[0]) == 1 && statusOf(t, scenario).Phase == v1alpha1.PhaseRemediating
	})
}
