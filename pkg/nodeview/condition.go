package nodeview

import (
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// Condition is what a decision reads of a node condition: its type,
// status and transition time; heartbeat times, reasons and messages change
// nothing. It takes 24 bytes where the three as fields took 56: the type
// and status are one interned pair, and the time is kept without its
// location. Equal conditions are equal values (==).
type Condition struct {
	kind        unique.Handle[conditionKind]
	seconds     int64
	nanoseconds int32
}

type conditionKind struct {
	conditionType corev1.NodeConditionType
	status        corev1.ConditionStatus
}

// NewCondition returns a condition of that type and status that last
// changed at transition.
func NewCondition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus, transition time.Time) Condition {
	return Condition{
		kind:    unique.Make(conditionKind{conditionType: conditionType, status: status}),
		seconds: transition.Unix(), nanoseconds: int32(transition.Nanosecond()),
	}
}

// Type is the condition's type.
func (c Condition) Type() corev1.NodeConditionType {
	if c.kind == (unique.Handle[conditionKind]{}) {
		return ""
	}
	return c.kind.Value().conditionType
}

// Status is the condition's status.
func (c Condition) Status() corev1.ConditionStatus {
	if c.kind == (unique.Handle[conditionKind]{}) {
		return ""
	}
	return c.kind.Value().status
}

// LastTransitionTime is when the condition's status last changed, in UTC.
func (c Condition) LastTransitionTime() time.Time {
	return time.Unix(c.seconds, int64(c.nanoseconds)).UTC()
}

// DeepCopyInto copies the condition, which holds nothing mutable.
func (c *Condition) DeepCopyInto(out *Condition) {
	*out = *c
}

// sameConditions tells whether two condition lists hold the same
// conditions, each as often, in any order. A kubelet and
// node-problem-detector keep their order, so the lists are compared
// position by position first, and counted only when that fails. Either way
// it is linear however many conditions a node has, and a change of any copy
// of a duplicated type counts: a decision reads every copy.
func sameConditions(a, b []Condition) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		// The node cache shares unchanged conditions with the node's next
		// object.
		return true
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return true
	}
	counts := make(map[Condition]int, len(a)-i)
	for j := i; j < len(a); j++ {
		counts[a[j]]++
		counts[b[j]]--
	}
	for _, n := range counts {
		if n != 0 {
			return false
		}
	}
	return true
}
