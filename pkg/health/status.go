package health

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Status builds the status from the input, the plan and the outcome of
// carrying the plan out. It is the only place that sets status fields, so the
// status records only what the cluster shows: a resource appears once it was
// created and leaves once the informers show it deleted, a step is timed out
// once its annotation was written.
func Status(in Input, p *Plan, out *Outcome) v1alpha1.NodeHealthCheckStatus {
	b := &statusBuilder{in: in, p: p, out: out, verdicts: map[string]*NodeVerdict{}}
	if in.ResourcesUnknown {
		// Nothing is known but the problem: the remediations stay on record.
		status := *in.NHC.Status.DeepCopy()
		if p.Problem != nil {
			status.ObservedGeneration = in.NHC.Generation
			b.setDisabled(&status)
			b.setPhase(&status)
			stampUpdate(&status, &in.NHC.Status, in.Now)
		}
		return status
	}
	previous := &in.NHC.Status
	entries := b.entries()
	status := v1alpha1.NodeHealthCheckStatus{
		ObservedNodes:    ptr.To(int32(p.Observed)),
		HealthyNodes:     ptr.To(int32(p.Healthy)),
		RemediatingNodes: ptr.To(int32(p.Remediating + newlyRemediating(out))),
		// The history sees every entry, before the bounds leave some out.
		RemediationHistory: b.history(entries),
		Conditions:         slices.Clone(previous.Conditions),
		ObservedGeneration: in.NHC.Generation,
	}
	var compacted bool
	status.UnhealthyNodes, b.unlisted, compacted = bound(b.p.rules.steps, entries, in.statusBytes(), in.Remediations)
	for _, entry := range status.UnhealthyNodes {
		if len(entry.Remediations) > 0 && !compacted {
			if status.InFlightRemediations == nil {
				status.InFlightRemediations = map[string]metav1.Time{}
			}
			// The deprecated inFlightRemediations, kept for old readers.
			status.InFlightRemediations[entry.Name] = entry.Remediations[0].Started
		}
	}
	b.setDisabled(&status)
	b.setStorm(&status)
	b.setOverlap(&status)
	b.setPhase(&status)
	stampUpdate(&status, previous, in.Now)
	return status
}

// stampUpdate sets lastUpdateTime to now when anything else changed, so that
// an unchanged status needs no write.
func stampUpdate(status, previous *v1alpha1.NodeHealthCheckStatus, now time.Time) {
	status.LastUpdateTime = previous.LastUpdateTime.DeepCopy()
	if !SameStatus(status, previous) {
		status.LastUpdateTime = ptr.To(apiTime(now))
	}
}

// SameStatus tells whether two statuses are semantically equal: a time
// read back from JSON is in another location than the one it was made in.
// Equal values are, and reflect says so several times faster than the
// semantic comparison, which every sync would otherwise pay over the whole
// history, twice: to stamp the status and to skip its write.
func SameStatus(a, b *v1alpha1.NodeHealthCheckStatus) bool {
	return reflect.DeepEqual(a, b) || apiequality.Semantic.DeepEqual(a, b)
}

// Status condition messages and phase reasons, with upstream's wording where
// upstream has them.
const (
	messageStormActiveThreshold = "Storm recovery is active - no new remediation starts until at most %d selected nodes are unhealthy"
	messageStormActiveCooldown  = "Storm mode is activated - preventing any new remediation until the storm is over and cooldown duration expired"
	messageStormInactive        = "Storm mode is deactivated, remediation can occur normally"
	messageCooldownStarted      = "Storm cooldown delay started - waiting before resuming normal remediation"
	messageCooldownCleared      = "Cooldown cleared - storm threshold triggered"
	messageCooldownCompleted    = "Storm cooldown completed"
	messageNoOverlap            = "No selected node is selected by another NodeHealthCheck"

	reasonPhaseDisabled    = "NHC is disabled: %s: %s"
	reasonPhasePaused      = "NHC is paused: "
	reasonPhaseRemediating = "NHC is remediating %d nodes"
	reasonPhaseEnabled     = "NHC is enabled, no ongoing remediation"
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
	s, rules, now := b.p.StormAfter(b.out), b.p.rules.storm, b.in.Now
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
			status.StormRecoveryStartTime = ptr.To(apiTime(s.Since))
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

// setOverlap records the overlap in the NodesOverlap condition. Like
// StormActive, it appears with the first overlap and then stays, False, so
// that its lastTransitionTime says when the overlap ended.
func (b *statusBuilder) setOverlap(status *v1alpha1.NodeHealthCheckStatus) {
	if o := b.p.Overlap; o != nil {
		b.setCondition(status, v1alpha1.ConditionNodesOverlap, v1alpha1.ReasonNodesOverlap, metav1.ConditionTrue, b.in.Now, o.message())
	} else if meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionNodesOverlap) != nil {
		b.setCondition(status, v1alpha1.ConditionNodesOverlap, v1alpha1.ReasonNoOverlap, metav1.ConditionFalse, b.in.Now, messageNoOverlap)
	}
}

// setCondition sets a condition; its lastTransitionTime changes only when
// its status does.
func (b *statusBuilder) setCondition(status *v1alpha1.NodeHealthCheckStatus, conditionType, reason string, conditionStatus metav1.ConditionStatus, transition time.Time, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: conditionType, Status: conditionStatus, Reason: reason, Message: truncate(message, conditionMessageLimit),
		LastTransitionTime: apiTime(transition), ObservedGeneration: b.in.NHC.Generation,
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

// ShowsRemediation says whether a status lists a node with a remediation:
// what the remediation guard (manifests/admission/remediation-guard.yaml)
// reads to refuse deleting the NodeHealthCheck, or changing its selector or
// templates. A resource created while the stored status shows none is one
// the guard cannot see until that status is written.
func ShowsRemediation(status *v1alpha1.NodeHealthCheckStatus) bool {
	return slices.ContainsFunc(status.UnhealthyNodes, func(entry *v1alpha1.UnhealthyNode) bool {
		return entry != nil && len(entry.Remediations) > 0
	})
}

// GuardedCreations bounds a plan's creates by what the remediation guard
// sees (ShowsRemediation of the stored status): while it sees none, one
// create (held: none, while a resource it does not show exists or a write
// of this NodeHealthCheck, writePending, is not seen yet), so that the
// guard is blind to one create at most, from its round trip until the
// status write that follows; bound once it sees one. A write of an
// earlier NodeHealthCheck of its name holds its node only: its resource
// is not this one's, and the guard never sees it here.
func GuardedCreations(stored *v1alpha1.NodeHealthCheckStatus, resources map[string][]Remediation, writePending bool, bound int) (maxCreations int, held bool) {
	if ShowsRemediation(stored) {
		return bound, false
	}
	if writePending {
		return 1, true
	}
	for _, rs := range resources {
		for _, r := range rs {
			if !r.Deleting {
				return 1, true
			}
		}
	}
	return 1, false
}

// RecordsATransition says whether a status records a transition the stored
// status does not: the end of a step (a time-out, a deletion), a node's
// mark of recovery or deselection set or cleared (a relapse), or a storm's
// start or end. That status is the only memory of it (a timed-out step
// never runs again; a relapse starts afresh and counts its healthyDelay
// from its own recovery; a storm holds back the nodes due after its start),
// so it is written at once, never left to the next sync, which a failed
// write or a new leader would lose.
func RecordsATransition(stored, status *v1alpha1.NodeHealthCheckStatus, out *Outcome) bool {
	return len(out.Deleted) > 0 || recordsATransitionBut(stored, status, out, nil)
}

// RecordsOnlyGoneDeletions says whether the transitions a status records
// that the stored status does not are deletions whose resources the API
// server showed gone at once, with their nodes' marks, and nothing else.
// Nothing of those resources is left to remember (a relapse has nothing
// to wait for), so the status may wait for the sync their watch events
// wake, which writes the nodes' entries gone too: one write, not two.
func RecordsOnlyGoneDeletions(stored, status *v1alpha1.NodeHealthCheckStatus, out *Outcome) bool {
	if len(out.Deleted) == 0 || out.DeletedGone < len(out.Deleted) {
		return false
	}
	deleted := make(map[string]bool, len(out.Deleted))
	for _, del := range out.Deleted {
		deleted[del.Node] = true
	}
	return !recordsATransitionBut(stored, status, out, deleted)
}

// recordsATransitionBut says whether a status records a transition other
// than a deletion that the stored status does not: a time-out, a storm's
// start or end, a node's mark set or cleared on a node but those of except.
func recordsATransitionBut(stored, status *v1alpha1.NodeHealthCheckStatus, out *Outcome, except map[string]bool) bool {
	return len(out.TimedOut) > 0 || stormActive(stored) != stormActive(status) || marksChanged(stored, status, except)
}

// marksChanged says whether a status sets or clears a node's mark of
// recovery or deselection that the stored status does not, on a node
// but those of except.
func marksChanged(stored, status *v1alpha1.NodeHealthCheckStatus, except map[string]bool) bool {
	marks := make(map[string]*metav1.Time, len(stored.UnhealthyNodes))
	for _, entry := range stored.UnhealthyNodes {
		if entry != nil {
			marks[entry.Name] = entry.ConditionsHealthyTimestamp
		}
	}
	return slices.ContainsFunc(status.UnhealthyNodes, func(entry *v1alpha1.UnhealthyNode) bool {
		if except[entry.Name] {
			return false
		}
		mark, listed := marks[entry.Name]
		if entry.ConditionsHealthyTimestamp == nil {
			return listed && mark != nil
		}
		return !entry.ConditionsHealthyTimestamp.Equal(mark)
	})
}

// stormActive says whether a status records an active storm.
func stormActive(status *v1alpha1.NodeHealthCheckStatus) bool {
	return meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionStormActive)
}
