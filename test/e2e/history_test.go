package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// historyOf returns the NodeHealthCheck's records of a node.
func historyOf(t *testing.T, nhc, node string) []v1alpha1.RemediationRecord {
	var records []v1alpha1.RemediationRecord
	for _, r := range statusOf(t, nhc).RemediationHistory {
		if r.TargetName == node {
			records = append(records, r)
		}
	}
	return records
}

func TestHistoryRecordsAFullCycle(t *testing.T) {
	t.Parallel()
	const scenario = "history-cycle"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "an ongoing record", func() bool {
		h := historyOf(t, scenario, nodes[0])
		return len(h) == 1 && h[0].Outcome == v1alpha1.OutcomeRemediating
	})

	// The remediator fences the node.
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	})
	framework.Eventually(t, 10*time.Second, "the record to show the fencing", func() bool {
		h := historyOf(t, scenario, nodes[0])
		return len(h) == 1 && h[0].Fenced != nil
	})

	// It comes back, unfenced and healthy.
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) { n.Spec.Taints = nil })
	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "the record to finish", func() bool {
		h := historyOf(t, scenario, nodes[0])
		return len(h) == 1 && h[0].Finished != nil
	})
	r := historyOf(t, scenario, nodes[0])[0]
	assert.Equal(t, v1alpha1.TargetKindNode, r.TargetKind)
	assert.Equal(t, corev1.NodeReady, r.ConditionType)
	assert.Equal(t, corev1.ConditionFalse, r.ConditionStatus)
	assert.Equal(t, v1alpha1.OutcomeRecovered, r.Outcome)
	ordered := []metav1.Time{r.Detected, r.Started, *r.Fenced, *r.Finished}
	for i := 1; i < len(ordered); i++ {
		assert.False(t, ordered[i].Before(&ordered[i-1]), "detected ≤ started ≤ fenced ≤ finished: %v", ordered)
	}
	require.Len(t, r.Steps, 1)
	assert.Equal(t, "TestRemediation", r.Steps[0].Kind)
	assert.Equal(t, nodes[0], r.Steps[0].Name)
	assert.Equal(t, scenario, r.Steps[0].TemplateName)
	assert.Equal(t, r.Started, r.Steps[0].Started)
	assert.Empty(t, historyOf(t, scenario, nodes[1]))
}

func TestHistoryRecordsEscalationSteps(t *testing.T) {
	t.Parallel()
	const scenario = "history-escalation"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	for _, name := range []string{"history-soft", "history-hard"} {
		env.CreateTemplate(t, name, multi)
	}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("history-soft"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("history-hard"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the first step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	env.SetRemediationCondition(t, env.Remediations(t, scenario)[nodes[0]][0].GetName(), v1alpha1.SucceededCondition, "False")
	framework.Eventually(t, 10*time.Second, "the second step on record", func() bool {
		h := historyOf(t, scenario, nodes[0])
		return len(h) == 1 && len(h[0].Steps) == 2
	})
	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "the record to finish", func() bool {
		h := historyOf(t, scenario, nodes[0])
		return len(h) == 1 && h[0].Finished != nil
	})
	r := historyOf(t, scenario, nodes[0])[0]
	assert.Equal(t, v1alpha1.OutcomeRecovered, r.Outcome)
	assert.Equal(t, []string{"history-soft", "history-hard"}, []string{r.Steps[0].TemplateName, r.Steps[1].TemplateName})
	assert.NotNil(t, r.Steps[0].TimedOut, "the failed step")
	assert.Nil(t, r.Steps[1].TimedOut)
	assert.Equal(t, r.Steps[0].Started, r.Started)
}
