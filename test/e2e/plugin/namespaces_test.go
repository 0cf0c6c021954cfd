package plugin

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

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestWhySeesRemediationsInEveryNamespace: a control-plane remediation in
// another namespace than any template's (a remediator that keeps its
// resources elsewhere) holds back a control-plane node, for the controller,
// which watches every namespace, and so for kubectl nhc, which says why.
func TestWhySeesRemediationsInEveryNamespace(t *testing.T) {
	t.Parallel()
	const scenario, elsewhere = "why-elsewhere", "why-elsewhere-remediations"
	ctx := context.Background()
	_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), elsewhere, metav1.DeleteOptions{})
	})
	_, err = env.Dynamic.Resource(framework.RemediationResource).Namespace(elsewhere).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediation",
		"metadata": map[string]any{
			"name": "why-elsewhere-other", "namespace": elsewhere,
			"labels":      map[string]any{v1alpha1.ControlPlaneNodeLabel: ""},
			"annotations": map[string]any{v1alpha1.NodeNameAnnotation: "why-elsewhere-other"},
		},
		"spec": map[string]any{},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2, framework.ControlPlane)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the controller to hold the control-plane node back", func() bool {
		return strings.Contains(env.GetNHC(t, scenario).Status.Reason, "1 for another control-plane node's remediation")
	})
	assert.Equal(t, nodes[0]+" is selected by "+scenario+": waiting: another control-plane node is under remediation, and only one at a time may be",
		lastLine(nhc(t, "why", nodes[0])))
}
