package health

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Status condition messages and phase reasons, with upstream's wording where
// upstream has them.
const (
	messageStormActiveThreshold = "Storm recovery is active - no new remediation starts until at most %d selected nodes are unhealthy"
	messageStormActiveCooldown  = "Storm mode is activated - preventing any new remediation until the storm is over and cooldown duration expired"
	messageStormInactive        = "Storm mode is deactivated, remediation can occur normally"
	messageCooldownStarted      = "Storm cooldown delay started - waiting before resuming normal remediation"
	messageCooldownCleared      = "Cooldown cleared - storm threshold triggered"
	messageCooldownCompleted    = "Storm cooldown completed"

	reasonPhaseDisabled    = "NHC is disabled: %s: %s"
	reasonPhasePaused      = "NHC is paused: "
	reasonPhaseRemediating = "NHC is remediating %d nodes"
	reasonPhaseEnabled     = "NHC is enabled, no ongoing remediation"
	reasonWaiting          = "%d unhealthy nodes wait: %s"
	reasonUnlisted         = "; %d nodes not listed in unhealthyNodes, which is bounded"

	// conditionMessageLimit is the maxLength of a condition's message.
	conditionMessageLimit = 32768
	// phaseReasonLimit keeps status.reason, a printer column, short.
	phaseReasonLimit = 1024
)

// setDisabled records the problem, or its absence, in the Disabled condition.
func (b *statusBuilder) setDisabled(status *v1alpha1.NodeHealthCheckStatus) {
	if p := b.p.Problem; p != nil {
		b.setCondition(status, v1alpha1.ConditionDisabled, p.Reason, metav1.ConditionTrue, b.in.Now, p.Message)
		return
	}
	b.setCondition(status, v1alpha1.ConditionDisabled, v1alpha1.ReasonEnabled, metav1.ConditionFalse, b.in.Now, messageEnabled)
}

// setStorm records the storm state: the conditions in both modes, and
// stormRecoveryActive/stormRecoveryStartTime when a threshold is set, as the
// spec says.
func (b *statusBuilder) setStorm(status *v1alpha1.NodeHealthCheckStatus) {
	s, rules, now := b.p.Storm, b.p.rules.storm, b.in.Now
	if !s.Configured {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormActive)
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormCooldownActive)
		status.StormRecoveryActive, status.StormRecoveryStartTime = nil, nil
		return
	}
	status.StormRecoveryActive, status.StormRecoveryStartTime = nil, nil
	if rules.threshold != nil {
		status.StormRecoveryActive = ptr.To(s.Active)
		if s.Active {
			status.StormRecoveryStartTime = ptr.To(metav1.NewTime(s.Since))
		}
	}
	// Like upstream, StormActive appears with the first storm.
	if s.Active {
		message := messageStormActiveCooldown
		if rules.threshold != nil {
			message = fmt.Sprintf(messageStormActiveThreshold, *rules.threshold)
		}
		b.setCondition(status, v1alpha1.ConditionStormActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionTrue, s.Since, message)
	} else if meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormActive) != nil {
		b.setCondition(status, v1alpha1.ConditionStormActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, now, messageStormInactive)
	}
	if rules.cooldown <= 0 {
		meta.RemoveStatusCondition(&status.Conditions, v1alpha1.ConditionStormCooldownActive)
		return
	}
	switch {
	case !s.CooldownEnds.IsZero():
		b.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionTrue, s.CooldownStarted, messageCooldownStarted)
	case s.Active:
		b.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, now, messageCooldownCleared)
	case meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionStormCooldownActive) != nil:
		b.setCondition(status, v1alpha1.ConditionStormCooldownActive, v1alpha1.ReasonStormThresholdChange, metav1.ConditionFalse, now, messageCooldownCompleted)
	}
}

// setCondition sets a condition; its lastTransitionTime changes only when
// its status does.
func (b *statusBuilder) setCondition(status *v1alpha1.NodeHealthCheckStatus, conditionType, reason string, conditionStatus metav1.ConditionStatus, transition time.Time, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: conditionType, Status: conditionStatus, Reason: reason, Message: truncate(message, conditionMessageLimit),
		LastTransitionTime: metav1.NewTime(transition), ObservedGeneration: b.in.NHC.Generation,
	})
}

// setPhase sets the phase and reason: Disabled, then Paused, then
// Remediating, then Enabled; and why unhealthy nodes wait.
func (b *statusBuilder) setPhase(status *v1alpha1.NodeHealthCheckStatus) {
	remediating := 0
	for _, entry := range status.UnhealthyNodes {
		if len(entry.Remediations) > 0 {
			remediating++
		}
	}
	// Disabled and Paused say why nothing is done, not why nodes wait.
	summary := ""
	switch {
	case b.p.Problem != nil:
		status.Phase, status.Reason = v1alpha1.PhaseDisabled, fmt.Sprintf(reasonPhaseDisabled, b.p.Problem.Reason, b.p.Problem.Message)
	case b.p.rules.paused():
		status.Phase, status.Reason = v1alpha1.PhasePaused, reasonPhasePaused+strings.Join(b.p.rules.pauseRequests, ",")
	case remediating > 0:
		status.Phase, status.Reason = v1alpha1.PhaseRemediating, fmt.Sprintf(reasonPhaseRemediating, remediating)
		summary = b.p.waitSummary()
	default:
		status.Phase, status.Reason = v1alpha1.PhaseEnabled, reasonPhaseEnabled
		summary = b.p.waitSummary()
	}
	unlisted := ""
	if b.unlisted > 0 {
		unlisted = fmt.Sprintf(reasonUnlisted, b.unlisted)
	}
	if summary != "" {
		summary = "; " + summary
	}
	// The count of unlisted nodes survives a long reason's truncation.
	status.Reason = truncate(status.Reason+summary, phaseReasonLimit-len(unlisted)) + unlisted
}

// waitSummary explains why unhealthy nodes wait for a remediation.
func (p *Plan) waitSummary() string {
	counts := map[WaitReason]int{}
	waiting := 0
	for i := range p.Nodes {
		if w := p.Nodes[i].Waiting; w != WaitNone && w != WaitPaused && w != WaitDisabled && w != WaitOwnWrite && w != WaitNextBatch && w != WaitStatusWrite {
			counts[w]++
			waiting++
		}
	}
	if waiting == 0 {
		return ""
	}
	var parts []string
	if n := counts[WaitMinHealthy]; n > 0 {
		parts = append(parts, fmt.Sprintf(summaryMinHealthy, n, p.Healthy, p.Observed, p.Budget.MinHealthy))
	}
	if n := counts[WaitOverlap]; n > 0 {
		parts = append(parts, p.overlapSummary(n))
	}
	for _, reason := range waitSummaryOrder {
		if n := counts[reason]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, waitSummaries[reason]))
		}
	}
	return fmt.Sprintf(reasonWaiting, waiting, strings.Join(parts, ", "))
}
