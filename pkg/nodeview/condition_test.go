package nodeview

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestSameConditions(t *testing.T) {
	at := func(c corev1.NodeConditionType, s corev1.ConditionStatus, minute int) Condition {
		return NewCondition(c, s, t0.Add(time.Duration(minute)*time.Minute))
	}
	ready, notReady, pressure := at(corev1.NodeReady, corev1.ConditionTrue, 0), at(corev1.NodeReady, corev1.ConditionFalse, 1), at(corev1.NodeMemoryPressure, corev1.ConditionFalse, 0)
	cases := []struct {
		name string
		a, b []Condition
		same bool
	}{
		{"equal", []Condition{ready, pressure}, []Condition{ready, pressure}, true},
		{"another order", []Condition{ready, pressure}, []Condition{pressure, ready}, true},
		{"one changed", []Condition{ready, pressure}, []Condition{notReady, pressure}, false},
		{"the second copy of a duplicated type changed", []Condition{ready, ready}, []Condition{ready, notReady}, false},
		{"the first copy of a duplicated type changed", []Condition{ready, ready}, []Condition{notReady, ready}, false},
		{"duplicates in another order", []Condition{ready, notReady, ready}, []Condition{notReady, ready, ready}, true},
		{"one copy more, one type less", []Condition{ready, ready, pressure}, []Condition{ready, pressure, pressure}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, sameConditions(tc.a, tc.b))
			assert.Equal(t, tc.same, sameConditions(tc.b, tc.a))
		})
	}
}

func TestConditionReadsAsItWasMade(t *testing.T) {
	c := NewCondition(corev1.NodeReady, corev1.ConditionFalse, t0.Add(time.Nanosecond).In(time.FixedZone("CET", 3600)))
	assert.Equal(t, corev1.NodeReady, c.Type())
	assert.Equal(t, corev1.ConditionFalse, c.Status())
	assert.Equal(t, t0.Add(time.Nanosecond).UTC(), c.LastTransitionTime())
	assert.Empty(t, Condition{}.Type())
	assert.Empty(t, Condition{}.Status())
}

// BenchmarkSameConditionsOfAHugeNode compares a node of 10,000 conditions
// with its update that changed the last one: one node's flood of conditions
// must not stall the node handlers.
func BenchmarkSameConditionsOfAHugeNode(b *testing.B) {
	const count = 10000
	old, updated := make([]Condition, count), make([]Condition, count)
	for i := range old {
		old[i] = NewCondition(corev1.NodeConditionType(fmt.Sprintf("Custom%05d", i)), corev1.ConditionFalse, t0.Time)
	}
	copy(updated, old)
	updated[count-1] = NewCondition(old[count-1].Type(), corev1.ConditionTrue, t0.Time)
	for b.Loop() {
		if sameConditions(old, updated) {
			b.Fatal("the change is not seen")
		}
	}
}
