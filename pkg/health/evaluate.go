package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// OldRemediationAge is the age at which a remediation resource is flagged
// for the old-remediation metric and alert.
const OldRemediationAge = 48 * time.Hour

// defaultConditions apply when the spec has none; the CRD defaults the field,
// so only objects that bypassed the API server lack it.
var defaultConditions = []v1alpha1.UnhealthyCondition{
	{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 300 * time.Second}},
	{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: metav1.Duration{Duration: 300 * time.Second}},
}

// evaluation holds the state of one Evaluate call.
type evaluation struct {
	in         Input
	spec       *v1alpha1.NodeHealthCheckSpec
	now        time.Time
	conditions []v1alpha1.UnhealthyCondition
	steps      []step
	storm      stormRules
	paused     bool
	// previous status entries by node name.
	previous map[string]*v1alpha1.UnhealthyNode
	// entries are the new status entries.
	entries []*v1alpha1.UnhealthyNode
	// candidates index d.Nodes entries that need their first remediation.
	candidates []int
	// withResources holds the selected nodes that have resources.
	withResources map[string]bool
	// busyControlPlane is a control-plane node under remediation, if any.
	busyControlPlane string
	cooldownStart    time.Time
	d                Decision
}

// Evaluate decides what to do for one NodeHealthCheck. It is pure: it reads
// its input, modifies nothing, and calls no API.
func Evaluate(in Input) Decision {
	e := &evaluation{
		in:            in,
		spec:          &in.NHC.Spec,
		now:           in.Now,
		conditions:    in.NHC.Spec.UnhealthyConditions,
		steps:         remediationSteps(&in.NHC.Spec),
		storm:         stormRulesOf(&in.NHC.Spec),
		paused:        len(in.NHC.Spec.PauseRequests) > 0,
		previous:      make(map[string]*v1alpha1.UnhealthyNode, len(in.NHC.Status.UnhealthyNodes)),
		withResources: make(map[string]bool, len(in.Remediations)),
	}
	if len(e.conditions) == 0 {
		e.conditions = defaultConditions
	}
	for _, entry := range in.NHC.Status.UnhealthyNodes {
		if entry != nil {
			e.previous[entry.Name] = entry
		}
	}
	e.d.spec = e.spec
	e.d.Observed = len(in.Nodes)
	e.d.Nodes = make([]NodeVerdict, len(in.Nodes))
	for i, node := range in.Nodes {
		e.d.Nodes[i].Node = node
		e.evaluateNode(i)
	}
	e.evaluateOrphans()

	minHealthy, err := MinHealthy(e.spec, e.d.Observed)
	e.d.Budget = Budget{MinHealthy: minHealthy, Allowed: err == nil && e.d.Healthy >= minHealthy}
	e.stormBefore()
	e.startRemediations()
	e.stormAfter()
	e.buildStatus()
	return e.d
}

// evaluateNode classifies one selected node and plans what its existing
// remediation needs: deletion, healthy delay, escalation.
func (e *evaluation) evaluateNode(i int) {
	v := &e.d.Nodes[i]
	node := v.Node
	resources := e.in.Remediations[node.Name]
	v.ControlPlane = isControlPlane(node.Labels)
	v.Excluded = node.Labels[v1alpha1.ExcludeFromRemediationLabel] == "true"
	v.Remediations = len(resources)
	m := matchConditions(node, e.conditions, e.now)
	switch {
	case m.expired != nil:
		v.State, v.Condition = StateUnhealthy, m.expired
	case m.pending != nil:
		v.State, v.Condition = StateSoonUnhealthy, m.pending
		e.deadline(m.expires)
	case len(resources) > 0:
		v.State = StateRecovering
	default:
		v.State = StateHealthy
		e.d.Healthy++
		if _, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
			e.d.RemoveConfirmation = append(e.d.RemoveConfirmation, node.Name)
		}
		return
	}
	v.Since, v.Expires = m.since, m.expires
	previous := e.previous[node.Name]
	if len(resources) > 0 {
		e.d.Remediating++
		e.withResources[node.Name] = true
		if v.ControlPlane || anyControlPlane(resources) {
			e.busyControlPlane = node.Name
		}
		e.flagOld(resources)
	}
	switch v.State {
	case StateRecovering:
		e.recover(v, resources, previous)
	case StateSoonUnhealthy:
		// The anti-loop rule: a node under remediation whose conditions changed
		// to another unhealthy one keeps its remediation and does not escalate.
		e.clearHealthyDelay(resources)
		if len(resources) > 0 || previous != nil {
			e.addEntry(node.Name, resources, previous)
		}
	case StateUnhealthy:
		e.clearHealthyDelay(resources)
		if previous == nil {
			e.nodeEvent(corev1.EventTypeNormal, "DetectedUnhealthy", node.Name,
				fmt.Sprintf("Node matches unhealthy condition. Node %q, condition type %q, condition status %q", node.Name, m.expired.Type, m.expired.Status))
		}
		if label, ok := node.Labels[v1alpha1.ExcludeFromRemediationLabel]; ok && label == "" {
			e.d.Warnings = append(e.d.Warnings, Event{Type: corev1.EventTypeWarning, Reason: "InvalidNodeLabel", Node: node.Name,
				Message: fmt.Sprintf("Node %s has exclude-from-remediation label with empty value, label will be ignored. Set value to 'true' to exclude node from remediation", node.Name)})
		}
		e.remediate(i, resources, e.addEntry(node.Name, resources, previous))
	}
}

// remediate moves an unhealthy node's remediation along: it waits for a
// pending deletion, escalates a timed-out or failed step, continues after a
// timed-out step, or makes the node a candidate for its first remediation.
func (e *evaluation) remediate(i int, resources []Remediation, entry *v1alpha1.UnhealthyNode) {
	v := &e.d.Nodes[i]
	p := progressOf(e.steps, resources, e.previous[v.Node.Name])
	switch {
	case p.deleting:
		// A resource of the same name may still exist: wait until it is gone.
		v.Waiting = WaitDeletion
	case p.current != nil:
		inferTimedOut(e.steps, p, entry)
		e.escalate(v, p, entry)
	case p.started:
		if p.next >= len(e.steps) {
			v.Waiting = WaitNoTemplate
			return
		}
		if v.Waiting = e.escalationGate(v); v.Waiting == WaitNone {
			e.create(v, p.next, true)
		}
	default:
		e.candidates = append(e.candidates, i)
	}
}

// escalate times out the running step when its timeout passed or its
// remediator reported Succeeded=False, and starts the next step.
func (e *evaluation) escalate(v *NodeVerdict, p progress, entry *v1alpha1.UnhealthyNode) {
	if p.currentStep < 0 || e.steps[p.currentStep].timeout == 0 {
		// remediationTemplate, or a step the spec no longer has: it runs
		// until the node is healthy.
		return
	}
	current := p.current
	timeoutAt := current.Created.Add(e.steps[p.currentStep].timeout)
	failed := current.Succeeded == metav1.ConditionFalse
	if !failed && e.now.Before(timeoutAt) {
		e.deadline(timeoutAt)
		return
	}
	if v.Waiting = e.escalationGate(v); v.Waiting != WaitNone {
		return
	}
	e.d.TimeOut = append(e.d.TimeOut, TimeOut{
		Node: v.Node.Name, Resource: current.Ref,
		Annotate: current.Succeeded != metav1.ConditionTrue, Failed: failed,
	})
	if rem := entryRemediation(entry, current.Ref.UID); rem != nil {
		now := metav1.NewTime(e.now)
		rem.TimedOut = &now
	}
	next := max(p.next, p.currentStep+1)
	if next < len(e.steps) {
		e.create(v, next, true)
		return
	}
	v.Waiting = WaitNoTemplate
	e.nodeEvent(corev1.EventTypeWarning, "NoTemplateLeft", v.Node.Name,
		fmt.Sprintf("Remediation timed out, and no template left to try. didn't find a template to use for NHC %s and node %s", e.in.NHC.Name, v.Node.Name))
}

// inferTimedOut records, for steps before the current one that the status
// does not show as timed out (a lost status write of a Succeeded=True step,
// which has no annotation), that they were given up when the current step
// started.
func inferTimedOut(steps []step, p progress, entry *v1alpha1.UnhealthyNode) {
	if p.currentStep < 0 {
		return
	}
	for _, rem := range entry.Remediations {
		if rem.TimedOut == nil && rem.Resource.UID != p.current.Ref.UID && stepOf(steps, &rem.Resource, rem.TemplateName) < p.currentStep {
			started := metav1.NewTime(p.current.Created)
			rem.TimedOut = &started
		}
	}
}

// escalationGate says why a node under remediation may not get its next step
// now. Escalation creates a resource, so what forbids new resources for the
// node forbids it too; the budget and storm recovery do not, because the node
// is already counted as unhealthy.
func (e *evaluation) escalationGate(v *NodeVerdict) WaitReason {
	switch {
	case e.in.Problem != nil:
		return WaitDisabled
	case e.paused:
		return WaitPaused
	case v.Excluded:
		return WaitExcluded
	}
	return WaitNone
}

// startRemediations gives candidates their first remediation, as far as
// the gates allow. Of several control-plane candidates, the one unhealthy
// longest goes first, then by name.
func (e *evaluation) startRemediations() {
	slices.SortFunc(e.candidates, func(a, b int) int {
		va, vb := &e.d.Nodes[a], &e.d.Nodes[b]
		if c := va.Since.Compare(vb.Since); c != 0 {
			return c
		}
		return strings.Compare(va.Node.Name, vb.Node.Name)
	})
	for _, i := range e.candidates {
		v := &e.d.Nodes[i]
		switch {
		case e.in.Problem != nil:
			v.Waiting = WaitDisabled
		case e.paused:
			v.Waiting = WaitPaused
		case v.Excluded:
			v.Waiting = WaitExcluded
		case !e.d.Budget.Allowed:
			v.Waiting = WaitMinHealthy
		case e.d.Storm.Active:
			v.Waiting = WaitStorm
		case v.ControlPlane && e.controlPlaneBusy(v.Node.Name):
			v.Waiting = WaitControlPlane
		default:
			if v.ControlPlane {
				e.busyControlPlane = v.Node.Name
			}
			e.create(v, 0, false)
		}
	}
	slices.SortFunc(e.d.Create, func(a, b Creation) int { return strings.Compare(a.Node, b.Node) })
}

func (e *evaluation) controlPlaneBusy(node string) bool {
	if e.busyControlPlane != "" && e.busyControlPlane != node {
		return true
	}
	for busy := range e.in.BusyControlPlaneNodes {
		if busy != node {
			return true
		}
	}
	return false
}

func (e *evaluation) create(v *NodeVerdict, stepIndex int, escalation bool) {
	s := e.steps[stepIndex]
	e.d.Create = append(e.d.Create, Creation{
		Node: v.Node.Name, Template: s.template, Step: stepIndex, Timeout: s.timeout,
		ControlPlane: v.ControlPlane, Escalation: escalation, firstResource: v.Remediations == 0,
	})
}

// recover handles a node that matches no unhealthy condition but still has
// remediation resources: they are deleted now, after healthyDelay, or never
// (negative healthyDelay) unless the node is manually confirmed healthy.
func (e *evaluation) recover(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode) {
	entry := e.addEntry(v.Node.Name, resources, previous)
	start := healthyDelayStart(resources, previous, e.now)
	startTime := metav1.NewTime(start)
	entry.ConditionsHealthyTimestamp = &startTime

	reason := DeleteNodeHealthy
	if _, confirmed := v.Node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
		reason = DeleteManuallyConfirmed
	} else if delay := e.healthyDelay(); delay < 0 {
		entry.HealthyDelayed = ptrTo(true)
		return
	} else if delay > 0 {
		for i := range resources {
			if r := &resources[i]; !r.Deleting && r.HealthyDelayStart.IsZero() {
				e.d.StartHealthyDelay = append(e.d.StartHealthyDelay, HealthyDelayMark{Resource: r.Ref, Start: start})
			}
		}
		if ends := start.Add(delay); e.now.Before(ends) {
			entry.HealthyDelayed = ptrTo(true)
			e.deadline(ends)
			return
		}
	}
	for i := range resources {
		if r := &resources[i]; !r.Deleting {
			e.d.Delete = append(e.d.Delete, Deletion{Node: v.Node.Name, Resource: r.Ref, Reason: reason})
		}
	}
}

func (e *evaluation) healthyDelay() time.Duration {
	if e.spec.HealthyDelay == nil {
		return 0
	}
	return e.spec.HealthyDelay.Duration
}

// healthyDelayStart is when the node was first seen healthy: the earliest
// healthy-delay annotation of its resources, else the status entry's record,
// else now.
func healthyDelayStart(resources []Remediation, previous *v1alpha1.UnhealthyNode, now time.Time) time.Time {
	var start time.Time
	for i := range resources {
		if t := resources[i].HealthyDelayStart; !t.IsZero() && (start.IsZero() || t.Before(start)) {
			start = t
		}
	}
	if start.IsZero() && previous != nil && previous.ConditionsHealthyTimestamp != nil {
		start = previous.ConditionsHealthyTimestamp.Time
	}
	if start.IsZero() {
		start = now
	}
	return start
}

// clearHealthyDelay restarts the healthy delay of a node that relapsed: the
// next recovery counts from its own start (upstream keeps the old start).
func (e *evaluation) clearHealthyDelay(resources []Remediation) {
	for i := range resources {
		if r := &resources[i]; !r.HealthyDelayStart.IsZero() && !r.Deleting {
			e.d.ClearHealthyDelay = append(e.d.ClearHealthyDelay, r.Ref)
		}
	}
}

// flagOld flags resources that just became older than OldRemediationAge.
func (e *evaluation) flagOld(resources []Remediation) {
	for i := range resources {
		r := &resources[i]
		if r.FlaggedOld || r.Deleting {
			continue
		}
		if at := r.Created.Add(OldRemediationAge); e.now.Before(at) {
			e.deadline(at)
		} else {
			e.d.FlagOld = append(e.d.FlagOld, r.Ref)
		}
	}
}

// evaluateOrphans deletes the resources of nodes that are gone or no longer
// selected, except those whose remediator expects to delete the node and has
// not yet succeeded.
func (e *evaluation) evaluateOrphans() {
	var orphans []string
	for node := range e.in.Remediations {
		if !e.withResources[node] && len(e.in.Remediations[node]) > 0 {
			orphans = append(orphans, node)
		}
	}
	slices.Sort(orphans)
	for _, node := range orphans {
		resources := e.in.Remediations[node]
		e.addEntry(node, resources, e.previous[node])
		if anyControlPlane(resources) {
			e.busyControlPlane = node
		}
		e.flagOld(resources)
		for i := range resources {
			r := &resources[i]
			if r.Deleting || (r.PermanentNodeDeletionExpected && r.Succeeded != metav1.ConditionTrue) {
				continue
			}
			e.d.Delete = append(e.d.Delete, Deletion{Node: node, Resource: r.Ref, Reason: DeleteNodeGone})
		}
	}
}

func anyControlPlane(resources []Remediation) bool {
	for i := range resources {
		if resources[i].ControlPlane {
			return true
		}
	}
	return false
}

// deadline records a future instant at which the decision changes.
func (e *evaluation) deadline(t time.Time) {
	if t.After(e.now) && (e.d.NextDeadline.IsZero() || t.Before(e.d.NextDeadline)) {
		e.d.NextDeadline = t
	}
}

func (e *evaluation) event(eventType, reason, message string) {
	e.d.Events = append(e.d.Events, Event{Type: eventType, Reason: reason, Message: message})
}

func (e *evaluation) nodeEvent(eventType, reason, node, message string) {
	e.d.Events = append(e.d.Events, Event{Type: eventType, Reason: reason, Message: message, Node: node})
}

func ptrTo[T any](v T) *T { return &v }
