package health

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An unhealthy node's incident moved along, as far as the gates allow:
// where it stands and when a step ends is the incident's (incident.go).

// remediate moves an unhealthy node's incident along: the escalation of a
// running or held step, or after one that timed out; a wait for a pending
// deletion; or its first remediation.
func (e *evaluation) remediate(i int, resources []Remediation) {
	v := &e.p.Nodes[i]
	inc := v.incident
	switch inc.state {
	case incidentRunning:
		// A running step is handled even while an earlier one is being
		// deleted: its timeout and failure must not freeze.
		v.Superseded = superseded(e.rules.steps, inc, resources)
		e.escalations = append(e.escalations, v)
	case incidentHeld, incidentNextStep:
		e.escalations = append(e.escalations, v)
	case incidentBlocked:
		v.Waiting = WaitDeletion
		e.createsFrom(v.Node.Name, e.now)
	case incidentExhausted:
		v.Waiting = WaitNoTemplate
	default:
		e.candidates = append(e.candidates, i)
		e.createsFrom(v.Node.Name, e.now)
	}
}

// escalate times out the running step when its timeout passed or its
// remediator reported Succeeded=False, and starts the next step; or starts
// the next step after one that timed out before. A closed gate holds both:
// the running step keeps running and is not annotated.
func (e *evaluation) escalate(v *NodeVerdict) {
	p, steps := v.incident, e.rules.steps
	current := p.current
	if current == nil {
		// The last step timed out and its resource is gone, or the step
		// to run lost its resource: it is created again, on its first
		// clock, unless its time ran out meanwhile.
		e.createsFrom(v.Node.Name, e.now)
		next := p.next
		end := p.end(steps, e.resumedLeaseOverdue(p)).at
		if !end.IsZero() {
			if e.now.Before(end) {
				e.deadline(end)
			} else {
				next++
			}
		}
		if next >= len(steps) {
			e.exhausted(v, p, false)
			return
		}
		if v.Waiting = e.createGate(v); v.Waiting == WaitNone {
			if next > p.next {
				e.p.TimeOut = append(e.p.TimeOut, TimeOut{Node: v.Node.Name, Resource: p.resumed.Resource, At: e.now})
			}
			e.create(v, next, true, false)
		}
		return
	}
	if p.currentStep < 0 {
		// A step the spec no longer has: it runs until the node is healthy.
		return
	}
	end := p.end(steps, e.leaseOverdue(v.Node.Name, p))
	if end.at.IsZero() {
		return
	}
	if !end.failed && e.now.Before(end.at) {
		e.deadline(end.at)
		e.createsFrom(v.Node.Name, end.at)
		return
	}
	e.createsFrom(v.Node.Name, e.now)
	failed, overdue := end.failed, end.overdue && !end.failed
	next := max(p.next, p.currentStep+1)
	gate := e.escalationGate
	if next < len(steps) {
		gate = e.createGate
	}
	if v.Waiting = gate(v); v.Waiting != WaitNone {
		return
	}
	if next < len(steps) && e.deferToNextPlan(v) {
		// The time-out and the next step go together, in the next plan.
		return
	}
	e.p.TimeOut = append(e.p.TimeOut, TimeOut{
		Node: v.Node.Name, Resource: current.Ref,
		Annotate: current.Succeeded != metav1.ConditionTrue, Failed: failed, LeaseOverdue: overdue, At: e.now,
	})
	if next < len(steps) {
		// After an overdue lease the next step takes it anew.
		e.create(v, next, true, overdue)
		return
	}
	e.exhausted(v, p, overdue)
}

// exhausted records that a node's last step ended with no step left; an
// overdue lease is released.
func (e *evaluation) exhausted(v *NodeVerdict, p *incident, overdue bool) {
	if p.current == nil && p.resumed != nil {
		// The last step's time ran out while its resource was gone.
		e.p.TimeOut = append(e.p.TimeOut, TimeOut{Node: v.Node.Name, Resource: p.resumed.Resource, At: e.now})
	}
	v.Waiting = WaitNoTemplate
	if overdue {
		e.p.ReleaseLeases = append(e.p.ReleaseLeases, v.Node.Name)
	}
	e.p.Events = append(e.p.Events, warning(EventNoTemplateLeft, v.Node.Name, fmt.Sprintf(messageNoTemplateLeft, e.in.NHC.Name, v.Node.Name)))
}
