package health

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Storm recovery holds back new remediations during a mass failure.
//
// With stormRecoveryThreshold (the spec's feature), a storm starts when the
// remediation limit is reached: after the remediations this evaluation still
// allows, at least one node is unhealthy and healthy <= minHealthy. It ends when
// at most stormRecoveryThreshold nodes are unhealthy. A storm also needs more
// unhealthy nodes than the threshold to start: with a threshold below
// observed-minHealthy, as the spec asks, that always holds; with a larger one
// it keeps the storm from ending and starting again on every evaluation.
//
// With only stormCooldownDuration (upstream's feature, kept for its objects), a
// storm starts when healthy < minHealthy and ends when that no longer holds.
//
// With a cooldown, the end also waits for stormCooldownDuration after the end
// condition starts to hold; the cooldown restarts when the condition breaks.
type stormRules struct {
	threshold *int32
	cooldown  time.Duration
}

func stormRulesOf(spec *v1alpha1.NodeHealthCheckSpec) stormRules {
	r := stormRules{threshold: spec.StormRecoveryThreshold}
	if spec.StormCooldownDuration != nil {
		r.cooldown = spec.StormCooldownDuration.Duration
	}
	return r
}

func (r stormRules) configured() bool {
	return r.threshold != nil || r.cooldown > 0
}

// canEnd tells whether the storm's end condition holds.
func (r stormRules) canEnd(healthy, unhealthy, minHealthy int) bool {
	if r.threshold != nil {
		return unhealthy <= int(*r.threshold)
	}
	return healthy >= minHealthy
}

// starts tells whether a storm starts.
func (r stormRules) starts(healthy, unhealthy, minHealthy int) bool {
	if unhealthy == 0 {
		return false
	}
	if r.threshold != nil {
		return healthy <= minHealthy && unhealthy > int(*r.threshold)
	}
	return healthy < minHealthy
}

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
