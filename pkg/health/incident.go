package health

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// An incident lasts while a node stays unhealthy, whichever unhealthy
// condition it shows; a recovery ends it. What a node's resources being
// deleted mean depends on whose incident they are: a step of this one goes
// on on its clock, or beside the next step; one from before makes the node
// wait until it is gone.

// heldStep makes the running step of a node whose resources are all being
// deleted the deleting resource of the highest step with a timeout that
// never timed out and is of this incident (ofThisIncident): deleted by its
// remediator or a user while the node stayed unhealthy, and held by a
// finalizer. One the controller deleted when the node recovered is no step
// of this incident.
func (e *evaluation) heldStep(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode, p *progress) bool {
	steps := e.rules.steps
	held, heldStep := (*Remediation)(nil), -1
	for i := range resources {
		r := &resources[i]
		idx := stepOf(steps, &r.Ref, r.TemplateName)
		if !r.Deleting || idx < 0 || steps[idx].timeout <= 0 || timedOutAt(r, previous) != nil || !ofThisIncident(r, v, previous) {
			continue
		}
		if idx > heldStep {
			held, heldStep = r, idx
		}
	}
	if held == nil {
		return false
	}
	p.current, p.currentStep = held, heldStep
	if rem := entryRemediation(previous, held.Ref.UID); rem != nil {
		p.recordedStart = rem.Started.Time
	}
	return true
}

// ofThisIncident tells whether a resource of an unhealthy node belongs to
// the incident the node is in: an incident lasts while the node stays
// unhealthy, whichever unhealthy condition it shows, so the condition's
// transition time alone cannot tell. A resource created before the last
// incident ended (endedAt: the node recovered, or was deselected or gone,
// and the controller deleted it then) is of none after it; else one created
// since the condition started is of it, and so is one the node's status
// entry records. The entry keeps that mark while such a resource remains
// (status.go), so the answer stays the same from sync to sync.
func ofThisIncident(r *Remediation, v *NodeVerdict, previous *v1alpha1.UnhealthyNode) bool {
	if ended := endedAt(previous); ended != nil && !r.Created.After(ended.Time) {
		// Created before the last incident ended: a node deselected and
		// selected again stayed unhealthy, and its condition's start cannot
		// tell.
		return false
	}
	if !v.Since.IsZero() && !r.Created.Before(v.Since) {
		return true
	}
	return entryRemediation(previous, r.Ref.UID) != nil
}

// endedAt is when a node's status entry says its last incident ended: its
// recovery, or when the NodeHealthCheck stopped selecting it or saw it
// gone (evaluateOrphans). Nil while an incident is under way.
func endedAt(entry *v1alpha1.UnhealthyNode) *metav1.Time {
	if entry == nil {
		return nil
	}
	return entry.ConditionsHealthyTimestamp
}

// goesOnBeside tells whether an escalation under way goes on while the
// node's other resources are being deleted: each is a step of this
// incident that timed out, and none has the kind and namespace of the step
// created next (the step resumed, or the one after it, or the next), so
// none can have its name.
func (e *evaluation) goesOnBeside(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode, p progress) bool {
	steps := e.rules.steps
	next := p.next
	if p.resumed != nil {
		next = stepOf(steps, &p.resumed.Resource, p.resumed.TemplateName)
	}
	if next < 0 {
		return false
	}
	upcoming := steps[min(next, len(steps)):min(next+2, len(steps))]
	for i := range resources {
		r := &resources[i]
		if !r.Deleting {
			continue
		}
		if !ofThisIncident(r, v, previous) || timedOutAt(r, previous) == nil || slices.ContainsFunc(upcoming, func(s step) bool {
			return s.kind == r.Ref.Kind && s.template.Namespace == r.Ref.Namespace
		}) {
			return false
		}
	}
	return true
}

// endedBeforeRelapse tells whether a node's status entry records an
// incident that ended before the node relapsed: the entry marks the
// node's recovery, the node is unhealthy again (its condition's duration
// passed or not), and none of the incident's resources remains. The
// relapse starts afresh, at the first step: the entry's steps are not its.
func endedBeforeRelapse(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode) bool {
	return endedAt(previous) != nil && len(resources) == 0 &&
		(v.State == StateUnhealthy || v.State == StateSoonUnhealthy)
}

// waitsForRecoveryDeletions tells whether a node unhealthy, or soon, still has a
// resource being deleted that the controller deleted when it recovered.
func waitsForRecoveryDeletions(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode) bool {
	if endedAt(previous) == nil {
		return false
	}
	return slices.ContainsFunc(resources, func(r Remediation) bool { return r.Deleting && !ofThisIncident(&r, v, previous) })
}

// HoldsOnRecord tells whether a NodeHealthCheck's status entry for a node
// records an incident under way (a step that never timed out, no recovery
// marked since) that it can go on with (CannotAct). Its step's resource may
// be gone (its remediator deleted it): the step is created again on its
// first clock, so the NodeHealthCheck still remediates the node, and no
// other one that selects it takes it over (Remediator). One that cannot act
// holds a node only by resources that exist.
func HoldsOnRecord(nhc *v1alpha1.NodeHealthCheck, entry *v1alpha1.UnhealthyNode) bool {
	if entry == nil || endedAt(entry) != nil || CannotAct(nhc) != "" {
		return false
	}
	return slices.ContainsFunc(entry.Remediations, func(rem *v1alpha1.Remediation) bool { return rem != nil && rem.TimedOut == nil })
}

// NodesHeldOnRecord are the nodes a NodeHealthCheck holds by its status
// (HoldsOnRecord).
func NodesHeldOnRecord(nhc *v1alpha1.NodeHealthCheck) []string {
	var nodes []string
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && HoldsOnRecord(nhc, entry) {
			nodes = append(nodes, entry.Name)
		}
	}
	return nodes
}
