package health

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Storm recovery's state: read from the last status, ended or cooled down
// before new remediations are planned, started after them. When a storm
// starts and ends is stormRules (budget.go).

// The storm's events, in upstream's words.
const (
	messageStormStarted  = "Storm recovery mode activated - delaying remediation until threshold is reached"
	messageStormCooldown = "Storm recovery mode will exit after cooldown delay"
	messageStormEnded    = "Storm recovery mode deactivated - normal remediation resumed"
)

// previousStorm reads the storm state from the last written status.
func previousStorm(status *v1alpha1.NodeHealthCheckStatus) (active bool, since, cooldownStart time.Time) {
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormActive); c != nil {
		active, since = c.Status == metav1.ConditionTrue, c.LastTransitionTime.Time
	} else if status.StormRecoveryActive != nil {
		active = *status.StormRecoveryActive
	}
	if status.StormRecoveryStartTime != nil {
		since = status.StormRecoveryStartTime.Time
	}
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormCooldownActive); c != nil && c.Status == metav1.ConditionTrue {
		cooldownStart = c.LastTransitionTime.Time
	}
	return active, since, cooldownStart
}

// stormBefore updates the storm state before new remediations are planned:
// a running storm may end, or start or cancel its cooldown.
func (e *evaluation) stormBefore() {
	rules := e.rules.storm
	active, since, cooldownStart := previousStorm(&e.in.NHC.Status)
	if !rules.configured() {
		if active {
			e.p.Events = append(e.p.Events, normal(EventStormEnded, "", messageStormEnded))
		}
		e.p.Storm = Storm{}
		return
	}
	e.p.Storm = Storm{Configured: true, Active: active, Since: since}
	if !active {
		return
	}
	healthy, unhealthy, minHealthy := e.p.Healthy, e.p.Observed-e.p.Healthy, e.p.Budget.MinHealthy
	if !rules.canEnd(healthy, unhealthy, minHealthy) {
		return
	}
	if rules.cooldown > 0 {
		if cooldownStart.IsZero() {
			cooldownStart = e.now
			e.p.Events = append(e.p.Events, warning(EventStormCooldown, "", messageStormCooldown))
		}
		ends := cooldownStart.Add(rules.cooldown)
		if e.now.Before(ends) {
			e.p.Storm.CooldownStarted, e.p.Storm.CooldownEnds = cooldownStart, ends
			e.deadline(ends)
			return
		}
	}
	e.p.Storm = Storm{Configured: true}
	e.p.Events = append(e.p.Events, normal(EventStormEnded, "", messageStormEnded))
}

// stormAfter starts a storm once the remediations this evaluation allows are planned.
func (e *evaluation) stormAfter() {
	if !e.p.Storm.Configured || e.p.Storm.Active || e.p.Deferred > 0 {
		// Remediations the budget allowed but this plan deferred come first.
		return
	}
	if e.rules.storm.starts(e.p.Healthy, e.p.Observed-e.p.Healthy, e.p.Budget.MinHealthy) {
		e.p.Storm.Active, e.p.Storm.Since = true, e.now
		e.p.Events = append(e.p.Events, warning(EventStormStarted, "", messageStormStarted))
	}
}
