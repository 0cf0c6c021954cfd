package framework

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// ClusterTemplateResource and ClusterRemediationResource are the kinds of
// a second test remediator, whose templates and resources are
// cluster-scoped (test/crds/remediators/cluster-remediation.yaml).
var (
	ClusterTemplateResource    = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	ClusterRemediationResource = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
)

// ClusterTemplateRef references a ClusterRemediationTemplate with a
// namespace, as the spec requires of every reference.
func ClusterTemplateRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Namespace: RemediatorNamespace, Name: name}
}

// CreateClusterTemplate creates a ClusterRemediationTemplate, and deletes it
// and the ClusterRemediations made from it when the test ends (there is no
// garbage collector); it returns a reference to it.
func (e *Env) CreateClusterTemplate(t testing.TB, name string) corev1.ObjectReference {
	t.Helper()
	_, err := e.Dynamic.Resource(ClusterTemplateResource).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"agent": "ipmi"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = e.Dynamic.Resource(ClusterTemplateResource).Delete(context.Background(), name, metav1.DeleteOptions{})
		list, err := e.Dynamic.Resource(ClusterRemediationResource).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, r := range list.Items {
			if r.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == name {
				_ = e.Dynamic.Resource(ClusterRemediationResource).Delete(context.Background(), r.GetName(), metav1.DeleteOptions{})
			}
		}
	})
	return ClusterTemplateRef(name)
}

// ClusterRemediations lists the ClusterRemediations of a node.
func (e *Env) ClusterRemediations(t testing.TB, node string) []unstructured.Unstructured {
	t.Helper()
	list, err := e.Dynamic.Resource(ClusterRemediationResource).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return OfNode(list.Items, node)
}

// OfNode keeps the remediation resources of a node.
func OfNode(resources []unstructured.Unstructured, node string) []unstructured.Unstructured {
	var found []unstructured.Unstructured
	for _, r := range resources {
		if resource.TargetNode(&r) == node {
			found = append(found, r)
		}
	}
	return found
}
