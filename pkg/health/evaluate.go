package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// WaitRetry is how soon a node that waits for something outside its
// NodeHealthCheck (another node's or another owner's resource, a deletion,
// the controller's own write showing) is looked at again, should the event
// that ends the wait never come.
const WaitRetry = time.Minute

// Evaluate decides what to do for one NodeHealthCheck. It is pure: it reads
// its input, modifies nothing, and calls no API.
func Evaluate(in Input) Plan {
	r, problem := parseSpec(&in.NHC.Spec, in.Selector)
	switch {
	case in.Unreadable != nil:
		problem = in.Unreadable
	case problem == nil:
		problem = in.RemediationProblem
	}
	e := &evaluation{in: in, rules: r, now: in.Now, remembered: -1, p: Plan{Problem: problem, rules: r, decidedFrom: in.NHC}}
	if in.ResourcesUnknown {
		e.enablementEvent()
		return e.p
	}
	e.previous = make(map[string]*v1alpha1.UnhealthyNode, len(in.NHC.Status.UnhealthyNodes))
	e.withResources = make(map[string]bool, len(in.Remediations))
	e.busyControlPlane = busyControlPlane(in)
	for _, entry := range in.NHC.Status.UnhealthyNodes {
		if entry != nil {
			e.previous[entry.Name] = entry
		}
	}
	e.p.Observed, e.p.Healthy = len(in.Nodes)+in.QuietNodes, in.QuietNodes
	e.p.Nodes = make([]NodeVerdict, len(in.Nodes))
	for i, node := range in.Nodes {
		e.p.Nodes[i].Node = node
		e.evaluateNode(i)
	}
	e.evaluateOrphans()
	e.overlaps()

	if r.budget != nil {
		minHealthy := r.budget.minHealthy(e.p.Observed)
		e.p.Budget = Budget{MinHealthy: minHealthy, Allowed: e.p.Healthy >= minHealthy}
	}
	e.stormBefore()
	for i := range e.escalations {
		e.escalate(e.escalations[i])
	}
	e.startRemediations()
	e.keepLeases()
	e.stormAfter()
	e.enablementEvent()
	for i := range e.p.Nodes {
		if endedByEvent(e.p.Nodes[i].Waiting) {
			// A deadline ends the wait if no event comes.
			e.deadline(e.now.Add(WaitRetry))
		}
	}
	return e.p
}

// evaluateNode classifies one selected node and plans what its existing
// remediation needs: deletion, healthy delay, escalation.
func (e *evaluation) evaluateNode(i int) {
	v := &e.p.Nodes[i]
	node := v.Node
	resources := e.in.Remediations[node.Name]
	v.Remediations = len(resources)
	m := matchConditions(node, e.rules.conditions, e.now)
	switch {
	case m.expired != nil:
		v.State, v.Condition = StateUnhealthy, m.expired
	case m.pending != nil:
		v.State, v.Condition = StateSoonUnhealthy, m.pending
		e.deadline(m.expires)
		e.createsFrom(node.Name, m.expires)
	case len(resources) > 0:
		v.State = StateRecovering
	case e.in.PendingNodes[node.Name]:
		// Its resource may have been created a moment ago: not healthy.
		v.State = StateRecovering
	default:
		v.State = StateHealthy
		e.p.Healthy++
		if _, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
			e.p.RemoveConfirmation = append(e.p.RemoveConfirmation, node.Name)
		}
		return
	}
	// Only a node that is not healthy is gated: a healthy one's labels are
	// not read, which at thousands of nodes a sync is mostly cache misses.
	v.ControlPlane = v1alpha1.IsControlPlane(node.Labels)
	v.Excluded = excluded(node.Labels)
	v.Since, v.Expires = m.since, m.expires
	previous := e.previous[node.Name]
	v.incident = incidentOf(e.rules, e.now, v.State == StateRecovering, v.Since, resources, previous)
	if e.in.PendingNodes[node.Name] {
		e.pending(v, resources, previous)
		return
	}
	previous = v.incident.record
	if len(resources) > 0 {
		e.p.Remediating++
		e.withResources[node.Name] = true
		e.noteControlPlane(node.Name, v.ControlPlane, resources)
		e.flagOld(resources)
	}
	switch v.State {
	case StateRecovering:
		v.Listed = true
		e.recover(v, resources)
	case StateSoonUnhealthy:
		// The anti-loop rule: a node under remediation whose conditions changed
		// to another unhealthy one keeps its remediation and does not escalate.
		e.clearHealthyDelay(resources)
		v.Listed = len(resources) > 0 || previous != nil
	case StateUnhealthy:
		v.Listed = true
		e.clearHealthyDelay(resources)
		if previous == nil && len(resources) == 0 {
			// A new incident; a node with resources is in one already.
			e.p.Events = append(e.p.Events, normal(EventDetectedUnhealthy, node.Name,
				fmt.Sprintf(messageDetectedUnhealthy, node.Name, m.expired.Type, m.expired.Status)))
		}
		if label, ok := node.Labels.Lookup(v1alpha1.ExcludeFromRemediationLabel); ok && label == "" {
			e.p.Warnings = append(e.p.Warnings, warning(EventInvalidNodeLabel, node.Name, fmt.Sprintf(messageInvalidNodeLabel, node.Name)))
		}
		e.remediate(i, resources)
	}
}

// pending counts a node whose last write the caches do not show yet, and
// plans nothing for it: its status entry stays as it was.
func (e *evaluation) pending(v *NodeVerdict, resources []Remediation, previous *v1alpha1.UnhealthyNode) {
	v.Waiting, v.Listed = WaitOwnWrite, previous != nil
	if len(resources) > 0 || (previous != nil && len(previous.Remediations) > 0) {
		e.p.Remediating++
		e.withResources[v.Node.Name] = true
		e.noteControlPlane(v.Node.Name, v.ControlPlane, resources)
	}
}

// startRemediations gives candidates their first remediation, as far as
// the gates allow. Of several control-plane candidates, the one unhealthy
// longest goes first, then by name.
func (e *evaluation) startRemediations() {
	slices.SortFunc(e.candidates, func(a, b int) int {
		va, vb := &e.p.Nodes[a], &e.p.Nodes[b]
		if c := va.Since.Compare(vb.Since); c != 0 {
			return c
		}
		return strings.Compare(va.Node.Name, vb.Node.Name)
	})
	for _, i := range e.candidates {
		v := &e.p.Nodes[i]
		if v.Waiting = e.createGate(v); v.Waiting != WaitNone {
			continue
		}
		if !e.remembers(v.Node.Name) {
			v.Waiting = WaitStatusFull
			continue
		}
		e.create(v, 0, false, false)
	}
	slices.SortFunc(e.p.Create, func(a, b Creation) int { return strings.Compare(a.Node, b.Node) })
}

// enablementEvent records the Disabled or Enabled transition: the problem
// against the last status's Disabled condition. With the resources unknown
// and no problem, nothing is known to have changed.
func (e *evaluation) enablementEvent() {
	was := meta.FindStatusCondition(e.in.NHC.Status.Conditions, v1alpha1.ConditionDisabled)
	if p := e.p.Problem; p != nil {
		if was == nil || was.Status != metav1.ConditionTrue || was.Reason != p.Reason || was.Message != p.Message {
			e.p.Events = append(e.p.Events, warning(EventDisabled, "", fmt.Sprintf(messageDisabled, p.Reason, p.Message)))
		}
		return
	}
	if !e.in.ResourcesUnknown && (was == nil || was.Status != metav1.ConditionFalse) {
		e.p.Events = append(e.p.Events, normal(EventEnabled, "", messageEnabled))
	}
}
