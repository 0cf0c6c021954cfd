package health

import (
	"slices"
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

// stormAfter starts a storm once the remediations this evaluation allows
// are planned: on the count of the nodes under remediation with this plan's
// admitted creates, which the outcome confirms (Plan.StormAfter).
func (e *evaluation) stormAfter() {
	if !e.p.Storm.Configured || e.p.Storm.Active || e.p.Problem != nil || e.rules.paused() {
		return
	}
	if e.p.Deferred > 0 {
		// Remediations the budget allowed but this plan deferred come first.
		return
	}
	if e.rules.storm.starts(e.p.stormCount(e.p.Remediating + firstResources(e.p.Create))) {
		e.p.Storm.Active, e.p.Storm.Since, e.p.Storm.Starting = true, e.now, true
	}
}

// stormCount is the count a storm's start is decided from, with the given
// number of nodes under remediation.
func (p *Plan) stormCount(remediations int) stormCount {
	return stormCount{remediations: remediations, observed: p.Observed, healthy: p.Healthy, minHealthy: p.Budget.MinHealthy}
}

// StormAfter is the storm state once the plan was carried out: a storm this
// plan starts (Storm.Starting) starts only if the nodes under remediation
// still reach the maximum with the creates that succeeded. A create that
// failed or was refused is no remediation (the spec counts remediations), so
// its node is retried on its back-off while no storm holds it back.
func (p *Plan) StormAfter(out *Outcome) Storm {
	s := p.Storm
	if s.Starting && !p.rules.storm.starts(p.stormCount(p.Remediating+newlyRemediating(out))) {
		return Storm{Configured: true}
	}
	return s
}

// EventsAfter are the plan's events once it was carried out: a storm's
// start only if it started (StormAfter).
func (p *Plan) EventsAfter(out *Outcome) []Event {
	if s := p.StormAfter(out); s.Starting {
		return append(slices.Clip(p.Events), warning(EventStormStarted, "", messageStormStarted))
	}
	return p.Events
}

// firstResources counts the creations of nodes that have no resource.
func firstResources(creations []Creation) int {
	n := 0
	for i := range creations {
		if creations[i].FirstResource {
			n++
		}
	}
	return n
}
