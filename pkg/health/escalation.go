package health

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// step is one remediation template in the order it is tried.
type step struct {
	template corev1.ObjectReference
	// group and kind are those of the resources created from the template.
	group, kind string
	// timeout is 0 for remediationTemplate, which runs until the node is healthy.
	timeout time.Duration
}

// remediationSteps lists the templates in the order they are tried.
func remediationSteps(spec *v1alpha1.NodeHealthCheckSpec) []step {
	escalations := spec.RemediationSteps()
	steps := make([]step, 0, len(escalations))
	for _, e := range escalations {
		steps = append(steps, newStep(e.RemediationTemplate, e.Timeout.Duration))
	}
	return steps
}

func newStep(template corev1.ObjectReference, timeout time.Duration) step {
	return step{
		template: template,
		group:    apiGroup(template.APIVersion),
		kind:     RemediationKind(template.Kind),
		timeout:  timeout,
	}
}

// RemediationKind is the kind of the resources created from a template kind:
// the template kind without its "Template" suffix.
func RemediationKind(templateKind string) string {
	return strings.TrimSuffix(templateKind, "Template")
}

// apiGroup returns the group of an apiVersion: "" for the core group.
func apiGroup(apiVersion string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group
}

// stepOf returns the index of the step a resource was created from, or -1
// when no step matches (the spec changed since). Resources without a template
// name, from older controllers, match the first step of their kind.
func stepOf(steps []step, ref *corev1.ObjectReference, templateName string) int {
	group := apiGroup(ref.APIVersion)
	for i := range steps {
		s := &steps[i]
		// A cluster-scoped resource has no namespace, whatever namespace the
		// reference to its cluster-scoped template carries.
		if s.kind == ref.Kind && s.group == group && (ref.Namespace == "" || s.template.Namespace == ref.Namespace) &&
			(templateName == "" || templateName == s.template.Name) {
			return i
		}
	}
	return -1
}

// progress is where a node stands in its remediation steps.
type progress struct {
	// current is the running (not timed-out) resource of the highest step.
	current *Remediation
	// currentStep is current's step, -1 when it matches no step.
	currentStep int
	// next is the step to create after current or after the last timed-out
	// step; len(steps) when none is left.
	next int
	// started is true when the node has a resource or a timed-out step on record.
	started bool
	// deleting is true when one of the node's resources is being deleted.
	deleting bool
	// resumed is the status record of the step that runs, or runs next,
	// whose resource is gone though the step never timed out (deleted by
	// its remediator or a user, or lost): the step keeps the clock it
	// started with when its resource is created again. Nil otherwise.
	resumed *v1alpha1.Remediation
	// recordedStart is when the status says the running step started:
	// earlier than its resource's creation once the step was resumed.
	recordedStart time.Time
}

// stepStarted is when the running step started: its resource's creation,
// or the first start of the step when that resource was created again, as
// the record of the resource gone or the status's record of this one shows.
func (p *progress) stepStarted() time.Time {
	started := p.current.Created
	if p.resumed != nil && p.resumed.Started.Time.Before(started) {
		started = p.resumed.Started.Time
	}
	if !p.recordedStart.IsZero() && p.recordedStart.Before(started) {
		started = p.recordedStart
	}
	return started
}

// progressOf works out a node's remediation progress from its resources and
// the timed-out steps its status entry remembers.
func progressOf(steps []step, resources []Remediation, entry *v1alpha1.UnhealthyNode) progress {
	p := progress{currentStep: -1}
	lastConsumed := -1
	for i := range resources {
		r := &resources[i]
		p.started = true
		if r.Deleting {
			p.deleting = true
		}
		idx := stepOf(steps, &r.Ref, r.TemplateName)
		lastConsumed = max(lastConsumed, idx)
		if r.Deleting || timedOutAt(r, entry) != nil {
			continue
		}
		if p.current == nil || idx > p.currentStep {
			p.current, p.currentStep = r, idx
		}
	}
	if entry != nil {
		for _, rem := range entry.Remediations {
			if rem.TimedOut != nil && !hasResource(resources, rem.Resource.UID) {
				p.started = true
				lastConsumed = max(lastConsumed, stepOf(steps, &rem.Resource, rem.TemplateName))
			}
		}
	}
	p.next = lastConsumed + 1
	p.resumed = resumedRecord(steps, resources, entry, p)
	if p.current != nil {
		if rem := entryRemediation(entry, p.current.Ref.UID); rem != nil {
			p.recordedStart = rem.Started.Time
		}
	}
	p.started = p.started || p.resumed != nil
	return p
}

// resumedRecord finds the earliest status record of the step that runs,
// or runs next, whose resource is gone before it timed out. The records of
// a node that was recovering are none: the controller deleted their
// resources, and a relapse starts afresh.
func resumedRecord(steps []step, resources []Remediation, entry *v1alpha1.UnhealthyNode, p progress) *v1alpha1.Remediation {
	if entry == nil || endedAt(entry) != nil {
		return nil
	}
	step := p.next
	if p.current != nil {
		step = p.currentStep
	}
	var first *v1alpha1.Remediation
	for _, rem := range entry.Remediations {
		if rem == nil || rem.TimedOut != nil || hasResource(resources, rem.Resource.UID) || stepOf(steps, &rem.Resource, rem.TemplateName) != step {
			continue
		}
		if first == nil || rem.Started.Before(&first.Started) {
			first = rem
		}
	}
	return first
}

// stepEnd is when and how a node's running step ends.
type stepEnd struct {
	// at is when it times out: its timeout, or its node lease's overdue
	// time when that comes first; zero when it runs until the node is
	// healthy. A remediationTemplate has no timeout: only its lease ends it.
	at time.Time
	// overdue is true when at is the lease's overdue time.
	overdue bool
	// failed is true when its remediator reported Succeeded=False, which
	// ends a step with a timeout at once.
	failed bool
}

// stepEnd says when the running step of a node ends; p.current must be set
// and its step known (p.currentStep >= 0).
func (e *evaluation) stepEnd(node string, p progress) stepEnd {
	var end stepEnd
	timeout := e.rules.steps[p.currentStep].timeout
	if timeout > 0 {
		end.at = p.stepStarted().Add(timeout)
		end.failed = p.current.Succeeded == metav1.ConditionFalse
	}
	if overdueAt := e.leaseOverdue(node, p.currentStep); !overdueAt.IsZero() && (end.at.IsZero() || overdueAt.Before(end.at)) {
		end.at, end.overdue = overdueAt, true
	}
	return end
}

// escalation is a node under remediation that may move to its next step.
type escalation struct {
	v *NodeVerdict
	p progress
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

// remediate moves an unhealthy node's remediation along: it plans the
// escalation of a running step, waits for a pending deletion, continues
// after a timed-out step, or makes the node a candidate for its first
// remediation.
func (e *evaluation) remediate(i int, resources []Remediation, previous *v1alpha1.UnhealthyNode) {
	v := &e.p.Nodes[i]
	steps := e.rules.steps
	p := progressOf(steps, resources, previous)
	switch {
	case p.current != nil:
		// A running step is handled even while an earlier one is being
		// deleted: its timeout and failure must not freeze.
		v.Superseded = superseded(steps, p, resources, previous)
		e.escalations = append(e.escalations, escalation{v: v, p: p})
	case p.deleting && e.heldStep(v, resources, previous, &p):
		// A step of this incident whose resource its remediator or a user
		// deleted, held by a finalizer: it still ends on its clock, and the
		// next step, another resource, follows.
		e.escalations = append(e.escalations, escalation{v: v, p: p})
	case p.deleting && !e.goesOnBeside(v, resources, previous, p):
		// Only resources being deleted: the node relapsed during their
		// deletion, or the next resource may share the name of one. Wait
		// until they are gone, then start again or go on.
		v.Waiting = WaitDeletion
		e.createsFrom(e.now)
	case p.started:
		if p.next >= len(steps) {
			v.Waiting = WaitNoTemplate
			return
		}
		e.escalations = append(e.escalations, escalation{v: v, p: p})
	default:
		e.candidates = append(e.candidates, i)
		e.createsFrom(e.now)
	}
}

// escalate times out the running step when its timeout passed or its
// remediator reported Succeeded=False, and starts the next step; or starts
// the next step after one that timed out before. A closed gate holds both:
// the running step keeps running and is not annotated.
func (e *evaluation) escalate(esc escalation) {
	v, p, steps := esc.v, esc.p, e.rules.steps
	current := p.current
	if current == nil {
		// The last step timed out and its resource is gone, or the step
		// to run lost its resource: it is created again, on its first
		// clock, unless its time ran out meanwhile.
		e.createsFrom(e.now)
		next := p.next
		if r := p.resumed; r != nil && steps[next].timeout > 0 {
			if end := r.Started.Add(steps[next].timeout); e.now.Before(end) {
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
	end := e.stepEnd(v.Node.Name, p)
	if end.at.IsZero() {
		return
	}
	if !end.failed && e.now.Before(end.at) {
		e.deadline(end.at)
		e.createsFrom(end.at)
		return
	}
	e.createsFrom(e.now)
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
func (e *evaluation) exhausted(v *NodeVerdict, p progress, overdue bool) {
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

// superseded finds the resources of steps before the running one that
// neither the last status nor an annotation shows as timed out (a lost
// status write of a Succeeded=True step, which has no annotation): they were
// given up when the running step started.
func superseded(steps []step, p progress, resources []Remediation, previous *v1alpha1.UnhealthyNode) map[types.UID]time.Time {
	if p.currentStep < 0 {
		return nil
	}
	var found map[types.UID]time.Time
	for i := range resources {
		r := &resources[i]
		if r.Ref.UID != p.current.Ref.UID && timedOutAt(r, previous) == nil && stepOf(steps, &r.Ref, r.TemplateName) < p.currentStep {
			if found == nil {
				found = map[types.UID]time.Time{}
			}
			found[r.Ref.UID] = p.current.Created
		}
	}
	return found
}
