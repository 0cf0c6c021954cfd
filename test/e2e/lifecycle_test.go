package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestRemediationLifecycle(t *testing.T) {
	t.Parallel()
	const scenario = "lifecycle"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	nhc := env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: 5 * time.Second}
	})
	framework.Eventually(t, 10*time.Second, "the status to count 3 healthy nodes", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.HealthyNodes != nil && *s.HealthyNodes == 3 && s.Phase == v1alpha1.PhaseEnabled
	})

	failedAt := time.Now()
	env.Fail(t, 0, nodes[0])
	framework.Consistently(t, 4*time.Second, "no remediation before the 5s duration", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
	framework.Eventually(t, time.Until(failedAt.Add(6*time.Second)), "a remediation within 1s after the duration", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})

	r := env.Remediations(t, scenario)[nodes[0]][0]
	assert.Equal(t, "test.medik8s.io/v1alpha1", r.GetAPIVersion())
	assert.Equal(t, "TestRemediation", r.GetKind())
	assert.Equal(t, nodes[0], r.GetName())
	assert.Equal(t, framework.RemediatorNamespace, r.GetNamespace())
	assert.Equal(t, map[string]any{"strategy": "reboot", "size": "foo"}, r.Object["spec"])
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "remediation.medik8s.io/v1alpha1", Kind: "NodeHealthCheck", Name: scenario, UID: nhc.UID, Controller: ptr.To(false)}}, r.GetOwnerReferences())
	assert.Equal(t, map[string]string{v1alpha1.NodeNameAnnotation: nodes[0], v1alpha1.TemplateNameAnnotation: scenario}, r.GetAnnotations())
	assert.Equal(t, map[string]string{v1alpha1.PartOfLabel: v1alpha1.PartOfValue}, r.GetLabels())

	framework.Eventually(t, 5*time.Second, "the status to show the remediation", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.Phase == v1alpha1.PhaseRemediating && len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 1
	})
	s := env.GetNHC(t, scenario).Status
	assert.Equal(t, int32(3), *s.ObservedNodes)
	assert.Equal(t, int32(2), *s.HealthyNodes)
	assert.Equal(t, int32(1), *s.RemediatingNodes)
	assert.Equal(t, nodes[0], s.UnhealthyNodes[0].Name)
	rem := s.UnhealthyNodes[0].Remediations[0]
	assert.Equal(t, corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediation", Namespace: framework.RemediatorNamespace, Name: nodes[0], UID: r.GetUID()}, rem.Resource)
	assert.Equal(t, scenario, rem.TemplateName)
	assert.Nil(t, rem.TimedOut)
	assert.Equal(t, nhc.Generation, env.GetNHC(t, scenario).Status.ObservedGeneration)
	assert.Equal(t, "NHC is remediating 1 nodes", s.Reason)

	env.Recover(t, nodes[0])
	framework.Eventually(t, 5*time.Second, "the remediation to be deleted", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
	framework.Eventually(t, 5*time.Second, "the status to be clean", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.Phase == v1alpha1.PhaseEnabled && len(s.UnhealthyNodes) == 0 && *s.HealthyNodes == 3
	})

	reasons := map[string]bool{}
	for _, e := range env.Events(t, scenario) {
		reasons[e.Reason] = true
		assert.Contains(t, e.Message, "[remediation] ")
	}
	for _, want := range []string{"Enabled", "DetectedUnhealthy", "RemediationCreated", "RemediationRemoved"} {
		assert.True(t, reasons[want], "event %s", want)
	}
	_, err := env.Kube.CoreV1().Nodes().Get(context.Background(), nodes[0], metav1.GetOptions{})
	require.NoError(t, err)
}
