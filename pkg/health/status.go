package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// addEntry adds a node's status entry: its resources, oldest first, with the
// steps that timed out and whose resources are gone since.
func (e *evaluation) addEntry(node string, resources []Remediation, previous *v1alpha1.UnhealthyNode) *v1alpha1.UnhealthyNode {
	entry := &v1alpha1.UnhealthyNode{Name: node}
	for i := range resources {
		r := &resources[i]
		entry.Remediations = append(entry.Remediations, &v1alpha1.Remediation{
			Resource:     r.Ref,
			Started:      metav1.NewTime(r.Created),
			TimedOut:     timedOutAt(r, previous).DeepCopy(),
			TemplateName: r.TemplateName,
		})
	}
	if previous != nil {
		for _, rem := range previous.Remediations {
			if rem != nil && rem.TimedOut != nil && !hasResource(resources, rem.Resource.UID) {
				entry.Remediations = append(entry.Remediations, rem.DeepCopy())
			}
		}
	}
	// Creation times have one-second precision: within a second, the
	// escalation order decides.
	slices.SortStableFunc(entry.Remediations, func(a, b *v1alpha1.Remediation) int {
		if c := a.Started.Compare(b.Started.Time); c != 0 {
			return c
		}
		if c := stepOf(e.steps, &a.Resource, a.TemplateName) - stepOf(e.steps, &b.Resource, b.TemplateName); c != 0 {
			return c
		}
		return strings.Compare(a.Resource.Name, b.Resource.Name)
	})
	e.entries = append(e.entries, entry)
	return entry
}

// buildStatus assembles the new status from the evaluation.
func (e *evaluation) buildStatus() {
	previous := &e.in.NHC.Status
	slices.SortFunc(e.entries, func(a, b *v1alpha1.UnhealthyNode) int { return strings.Compare(a.Name, b.Name) })
	status := v1alpha1.NodeHealthCheckStatus{
		ObservedNodes:      ptrTo(int32(e.d.Observed)),
		HealthyNodes:       ptrTo(int32(e.d.Healthy)),
		RemediatingNodes:   ptrTo(int32(e.d.Remediating)),
		UnhealthyNodes:     e.entries,
		Conditions:         slices.Clone(previous.Conditions),
		LastUpdateTime:     previous.LastUpdateTime.DeepCopy(),
		ObservedGeneration: e.in.NHC.Generation,
	}
	for _, entry := range e.entries {
		if len(entry.Remediations) > 0 {
			setInFlight(&status, entry.Name, entry.Remediations[0].Started)
		}
	}
	e.setDisabled(&status)
	e.writeStormStatus(&status)
	e.d.Status = status
	e.d.waitSummary = e.waitSummary()
	e.d.setPhase()
}

// setDisabled records the Problem, or its absence, in the Disabled condition.
func (e *evaluation) setDisabled(status *v1alpha1.NodeHealthCheckStatus) {
	was := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionDisabled)
	if p := e.in.Problem; p != nil {
		if was == nil || was.Status != metav1.ConditionTrue || was.Reason != p.Reason || was.Message != p.Message {
			e.event(corev1.EventTypeWarning, "Disabled", fmt.Sprintf("Disabling NHC. Reason: %s, Message: %s", p.Reason, p.Message))
		}
		e.setCondition(status, v1alpha1.ConditionDisabled, p.Reason, metav1.ConditionTrue, e.now, p.Message)
		return
	}
	const enabled = "No issues found, NodeHealthCheck is enabled."
	if was == nil || was.Status != metav1.ConditionFalse {
		e.event(corev1.EventTypeNormal, "Enabled", enabled)
	}
	e.setCondition(status, v1alpha1.ConditionDisabled, v1alpha1.ReasonEnabled, metav1.ConditionFalse, e.now, enabled)
}

// setCondition sets a condition; its lastTransitionTime changes only when
// its status does.
func (e *evaluation) setCondition(status *v1alpha1.NodeHealthCheckStatus, conditionType, reason string, conditionStatus metav1.ConditionStatus, transition time.Time, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: conditionType, Status: conditionStatus, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(transition), ObservedGeneration: e.in.NHC.Generation,
	})
}

// waitSummary explains why unhealthy nodes wait for a remediation.
func (e *evaluation) waitSummary() string {
	counts := map[WaitReason]int{}
	waiting := 0
	for i := range e.d.Nodes {
		if w := e.d.Nodes[i].Waiting; w != WaitNone && w != WaitPaused && w != WaitDisabled {
			counts[w]++
			waiting++
		}
	}
	if waiting == 0 {
		return ""
	}
	var parts []string
	if n := counts[WaitMinHealthy]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d because only %d of %d nodes are healthy and %d must be", n, e.d.Healthy, e.d.Observed, e.d.Budget.MinHealthy))
	}
	for _, reason := range []struct {
		wait WaitReason
		text string
	}{
		{WaitStorm, "for storm recovery to end"},
		{WaitControlPlane, "for another control-plane node's remediation"},
		{WaitExcluded, "excluded from remediation"},
		{WaitDeletion, "for their remediation's deletion"},
		{WaitNoTemplate, "with no remediation template left to try"},
	} {
		if n := counts[reason.wait]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, reason.text))
		}
	}
	return fmt.Sprintf("%d unhealthy nodes wait: %s", waiting, strings.Join(parts, ", "))
}

// setPhase sets the phase and reason: Disabled, then Paused, then
// Remediating, then Enabled.
func (d *Decision) setPhase() {
	s := &d.Status
	remediating := 0
	for _, entry := range s.UnhealthyNodes {
		if len(entry.Remediations) > 0 {
			remediating++
		}
	}
	switch {
	case meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionDisabled):
		c := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionDisabled)
		s.Phase, s.Reason = v1alpha1.PhaseDisabled, fmt.Sprintf("NHC is disabled: %s: %s", c.Reason, c.Message)
		return
	case len(d.spec.PauseRequests) > 0:
		s.Phase, s.Reason = v1alpha1.PhasePaused, "NHC is paused: "+strings.Join(d.spec.PauseRequests, ",")
		return
	case remediating > 0:
		s.Phase, s.Reason = v1alpha1.PhaseRemediating, fmt.Sprintf("NHC is remediating %d nodes", remediating)
	default:
		s.Phase, s.Reason = v1alpha1.PhaseEnabled, "NHC is enabled, no ongoing remediation"
	}
	if d.waitSummary != "" {
		s.Reason += "; " + d.waitSummary
	}
}

// RecordCreated adds a created remediation resource to the status. The
// controller calls it for each Creation that succeeded.
func (d *Decision) RecordCreated(c Creation, ref corev1.ObjectReference, started time.Time) {
	s := &d.Status
	i, found := slices.BinarySearchFunc(s.UnhealthyNodes, c.Node, func(entry *v1alpha1.UnhealthyNode, node string) int {
		return strings.Compare(entry.Name, node)
	})
	if !found {
		s.UnhealthyNodes = slices.Insert(s.UnhealthyNodes, i, &v1alpha1.UnhealthyNode{Name: c.Node})
	}
	entry := s.UnhealthyNodes[i]
	entry.Remediations = append(entry.Remediations, &v1alpha1.Remediation{
		Resource: ref, Started: metav1.NewTime(started), TemplateName: c.Template.Name,
	})
	if c.firstResource {
		d.Remediating++
		s.RemediatingNodes = ptrTo(int32(d.Remediating))
	}
	setInFlight(s, c.Node, entry.Remediations[0].Started)
	d.setPhase()
}

// setInFlight fills the deprecated inFlightRemediations map, kept for old readers.
func setInFlight(s *v1alpha1.NodeHealthCheckStatus, node string, started metav1.Time) {
	if _, ok := s.InFlightRemediations[node]; ok {
		return
	}
	if s.InFlightRemediations == nil {
		s.InFlightRemediations = map[string]metav1.Time{}
	}
	s.InFlightRemediations[node] = started
}

// Disabled returns the status of a NodeHealthCheck that cannot be evaluated
// at all, for example because it may not read its remediation resources: its
// last status, unchanged but for the Disabled condition, phase and reason, and
// the Disabled event on the transition. Deciding from caches that cannot fill
// could lose remediations.
func Disabled(nhc *v1alpha1.NodeHealthCheck, problem Problem, now time.Time) (v1alpha1.NodeHealthCheckStatus, []Event) {
	e := &evaluation{in: Input{NHC: nhc, Problem: &problem, Now: now}, spec: &nhc.Spec, now: now}
	e.d.spec = e.spec
	e.d.Status = *nhc.Status.DeepCopy()
	e.d.Status.ObservedGeneration = nhc.Generation
	e.setDisabled(&e.d.Status)
	e.d.setPhase()
	return e.d.Status, e.d.Events
}
