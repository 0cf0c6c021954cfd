package health

import (
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
	if entry == nil || entry.ConditionsHealthyTimestamp != nil {
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

// timedOutAt returns when a resource was given up on, from the status entry
// or from its annotation, or nil.
func timedOutAt(r *Remediation, entry *v1alpha1.UnhealthyNode) *metav1.Time {
	if rem := entryRemediation(entry, r.Ref.UID); rem != nil && rem.TimedOut != nil {
		return rem.TimedOut
	}
	if !r.TimedOut.IsZero() {
		t := metav1.NewTime(r.TimedOut)
		return &t
	}
	return nil
}

func entryRemediation(entry *v1alpha1.UnhealthyNode, uid types.UID) *v1alpha1.Remediation {
	if entry == nil {
		return nil
	}
	for _, rem := range entry.Remediations {
		if rem != nil && rem.Resource.UID == uid {
			return rem
		}
	}
	return nil
}

func hasResource(resources []Remediation, uid types.UID) bool {
	for i := range resources {
		if resources[i].Ref.UID == uid {
			return true
		}
	}
	return false
}
