package sim

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	h := Generate(1, 0)
	h.Steps = h.Steps[:len(initialNodes)+4]
	h.Steps = append(h.Steps,
		Step{Op: OpCreateNHC, NHC: "nhc-1", Spec: &NHCSpec{Pools: []string{"a"}, Conditions: []ConditionSpec{{Type: "Ready", Status: "False", Duration: 10 * time.Second}}, Steps: []TemplateStep{{Kind: "Alpha", Template: "alpha-1"}}}},
		Step{After: 5 * time.Second, Op: OpCondition, Node: "worker-0", Condition: "Ready", Status: "False"},
		Step{After: time.Minute, Op: OpCondition, Node: "worker-0", Condition: "Ready", Status: "True"},
	)
	start := time.Now()
	v := play(t, h, t.Logf)
	t.Logf("violation %v in %s", v, time.Since(start))
}
