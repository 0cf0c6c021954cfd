package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func TestNodeStateFromConditions(t *testing.T) {
	cases := []struct {
		name         string
		node         *nodeview.Node
		wantState    NodeState
		wantDeadline time.Time
		wantType     corev1.NodeConditionType
	}{
		{"ready", testNode("n"), StateHealthy, time.Time{}, ""},
		{"no conditions at all", testNode("n", func(n *nodeview.Node) { n.Conditions = nil }), StateHealthy, time.Time{}, ""},
		{"not ready just before the duration", testNode("n", notReady(conditionDuration-time.Nanosecond)), StateSoonUnhealthy, now.Add(time.Nanosecond), corev1.NodeReady},
		{"not ready exactly for the duration", testNode("n", notReady(conditionDuration)), StateUnhealthy, time.Time{}, corev1.NodeReady},
		{"not ready just after the duration", testNode("n", notReady(conditionDuration+time.Nanosecond)), StateUnhealthy, time.Time{}, corev1.NodeReady},
		{"unknown for a minute", testNode("n", condition(corev1.NodeReady, corev1.ConditionUnknown, time.Minute)), StateSoonUnhealthy, now.Add(4 * time.Minute), corev1.NodeReady},
		{"a status no entry lists", testNode("n", condition("DiskPressure", corev1.ConditionTrue, time.Hour)), StateHealthy, time.Time{}, ""},
		{"a custom condition type, expired", testNode("n", condition("KernelDeadlock", corev1.ConditionTrue, time.Minute)), StateUnhealthy, time.Time{}, "KernelDeadlock"},
		{"a custom condition type, one second left", testNode("n", condition("KernelDeadlock", corev1.ConditionTrue, 59*time.Second)), StateSoonUnhealthy, now.Add(time.Second), "KernelDeadlock"},
		{"ready, but a custom condition matches", testNode("n", condition("KernelDeadlock", corev1.ConditionTrue, 2*time.Minute), notReady(time.Second)), StateUnhealthy, time.Time{}, "KernelDeadlock"},
		{"two pending conditions: the earlier deadline wins",
			testNode("n", condition("KernelDeadlock", corev1.ConditionTrue, 50*time.Second), notReady(conditionDuration-2*time.Second)),
			StateSoonUnhealthy, now.Add(2 * time.Second), corev1.NodeReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := testNHC()
			nhc.Spec.UnhealthyConditions = append(nhc.Spec.UnhealthyConditions, unhealthyCondition("KernelDeadlock", corev1.ConditionTrue, time.Minute))
			d := evaluate(nhc, []*nodeview.Node{tc.node}, nil)
			v := d.Nodes[0]
			assert.Equal(t, tc.wantState, v.State)
			assert.Equal(t, tc.wantDeadline, d.NextDeadline, "next deadline")
			if tc.wantType == "" {
				assert.Nil(t, v.Condition)
			} else if assert.NotNil(t, v.Condition) {
				assert.Equal(t, tc.wantType, v.Condition.Type)
			}
			assert.Equal(t, tc.wantState == StateHealthy, d.Healthy == 1, "only a healthy node counts as healthy")
		})
	}
}
