package cli

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// none is what a table shows for a value that does not apply.
const none = "-"

// timestamp is a time as the API shows it, in UTC.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

// relative says when t is from now: "in 3m", "5m ago" or "now".
func relative(t, now time.Time) string {
	switch d := t.Sub(now); {
	case t.IsZero():
		return none
	case d >= time.Second:
		return "in " + duration.HumanDuration(d)
	case d <= -time.Second:
		return duration.HumanDuration(-d) + " ago"
	}
	return "now"
}

// age is how long ago t was, as kubectl shows ages.
func age(t, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return duration.HumanDuration(now.Sub(t))
}

// offset is how long after from t was: "+20s".
func offset(from time.Time, t *time.Time) string {
	if t == nil {
		return none
	}
	return "+" + duration.HumanDuration(t.Sub(from))
}

// condition writes a condition as Type=Status.
func condition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus) string {
	if conditionType == "" {
		return none
	}
	return fmt.Sprintf("%s=%s", conditionType, status)
}

// conditionOf writes an unhealthy condition as Type=Status.
func conditionOf(c *v1alpha1.UnhealthyCondition) string {
	if c == nil {
		return none
	}
	return condition(c.Type, c.Status)
}

// plural writes a count with its noun: "1 node", "2 nodes".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orNone shows an empty string as none.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}
