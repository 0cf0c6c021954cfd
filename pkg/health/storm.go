package health

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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

const (
	eventStormStarted         = "StormRecoveryStarted"
	eventStormCooldownStarted = "StormRecoveryCooldownStarted"
	eventStormEnded           = "StormRecoveryEnded"
)

// stormBefore updates the storm state before new remediations are planned:
// a running storm may end, or start or cancel its cooldown.
func (e *evaluation) stormBefore() {
	rules := e.storm
	active, since, cooldownStart := previousStorm(&e.in.NHC.Status)
	e.cooldownStart = time.Time{}
	if !rules.configured() {
		if active {
			e.event(corev1.EventTypeNormal, eventStormEnded, "Storm recovery mode deactivated - normal remediation resumed")
		}
		e.d.Storm = Storm{}
		return
	}
	e.d.Storm = Storm{Configured: true, Active: active, Since: since}
	if !active {
		return
	}
	healthy, unhealthy, minHealthy := e.d.Healthy, e.d.Observed-e.d.Healthy, e.d.Budget.MinHealthy
	if !rules.canEnd(healthy, unhealthy, minHealthy) {
		return
	}
	if rules.cooldown > 0 {
		if cooldownStart.IsZero() {
			cooldownStart = e.now
			e.event(corev1.EventTypeWarning, eventStormCooldownStarted, "Storm recovery mode will exit after cooldown delay")
		}
		ends := cooldownStart.Add(rules.cooldown)
		if e.now.Before(ends) {
			e.cooldownStart = cooldownStart
			e.d.Storm.CooldownEnds = ends
			e.deadline(ends)
			return
		}
	}
	e.d.Storm = Storm{Configured: true}
	e.event(corev1.EventTypeNormal, eventStormEnded, "Storm recovery mode deactivated - normal remediation resumed")
}

// stormAfter starts a storm once the remediations this evaluation allows are planned.
func (e *evaluation) stormAfter() {
	if !e.d.Storm.Configured || e.d.Storm.Active {
		return
	}
	if e.storm.starts(e.d.Healthy, e.d.Observed-e.d.Healthy, e.d.Budget.MinHealthy) {
		e.d.Storm.Active, e.d.Storm.Since = true, e.now
		e.event(corev1.EventTypeWarning, eventStormStarted, "Storm recovery mode activated - delaying remediation until threshold is reached")
	}
}

// writeStormStatus records the storm state in the status: the conditions in
// both modes, and stormRecoveryActive/stormRecoveryStartTime when a threshold
// is set, as the spec says.
func (e *evaluation) writeStormStatus(status *v1alpha1.NodeHealthCheckStatus) {
	s := e.d.Storm
	if !s.Configured {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormActive)
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormCooldownActive)
		status.StormRecoveryActive, status.StormRecoveryStartTime = nil, nil
		return
	}
	if e.storm.threshold != nil {
		active := s.Active
		status.StormRecoveryActive = &active
		status.StormRecoveryStartTime = nil
		if s.Active {
			since := metav1.NewTime(s.Since)
			status.StormRecoveryStartTime = &since
		}
	} else {
		status.StormRecoveryActive, status.StormRecoveryStartTime = nil, nil
	}
	// Like upstream, StormActive appears with the first storm.
	if s.Active {
		e.setCondition(status, v1alpha1.ConditionStormActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionTrue, s.Since, e.stormActiveMessage())
	} else if meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormActive) != nil {
		e.setCondition(status, v1alpha1.ConditionStormActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, e.now, "Storm mode is deactivated, remediation can occur normally")
	}
	if e.storm.cooldown <= 0 {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormCooldownActive)
		return
	}
	switch {
	case !s.CooldownEnds.IsZero():
		e.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionTrue, e.cooldownStart, "Storm cooldown delay started - waiting before resuming normal remediation")
	case s.Active:
		e.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, e.now, "Cooldown cleared - storm threshold triggered")
	case meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormCooldownActive) != nil:
		e.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, e.now, "Storm cooldown completed")
	}
}

func (e *evaluation) stormActiveMessage() string {
	if e.storm.threshold != nil {
		return fmt.Sprintf("Storm recovery is active - no new remediation starts until at most %d selected nodes are unhealthy", *e.storm.threshold)
	}
	return "Storm mode is activated - preventing any new remediation until the storm is over and cooldown duration expired"
}
