package health

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// An incident is what a NodeHealthCheck does about one node, from when the
// node turns unhealthy until it is healthy again, deselected or gone. Its
// memory is the node's status entry (its record): each step's first start,
// the steps that timed out, and the end of the last incident; the
// resources and their annotations show the rest. incidentOf is the one
// transition, from the record and what the cluster shows now to the
// incident now; the record the status writes next comes from it
// (recordOf, incident_record.go), and nothing outside these two files
// computes a step's start or end.
// docs/remediation.md states the machine as a table.

// incidentState is where a node's incident stands.
type incidentState uint8

const (
	// incidentDetected: unhealthy, no step on record; the first step is
	// created once the gates open.
	incidentDetected incidentState = iota
	// incidentRunning: a step's resource exists and has not timed out; it
	// times out on its clock, or when its remediator reports
	// Succeeded=False, and the next step follows.
	incidentRunning
	// incidentHeld: the running step's resource was deleted by its
	// remediator or a user before it timed out and is held by a finalizer;
	// it runs on its clock as incidentRunning does.
	incidentHeld
	// incidentNextStep: no step runs; the last one timed out and its
	// resource is gone or going, or the step's resource is gone before it
	// timed out (resumed), which is created again on its first clock.
	incidentNextStep
	// incidentExhausted: every step timed out.
	incidentExhausted
	// incidentBlocked: resources are being deleted that the next create
	// must wait for: the last recovery's, or one that may share its name.
	incidentBlocked
	// incidentRecovering: healthy, with resources left; they are deleted
	// once healthyDelay passed since endedAt.
	incidentRecovering
)

// incident is a node's incident as this evaluation finds it.
type incident struct {
	state incidentState
	// record is the status entry this incident goes on from: nil when the
	// node has none, or when its last incident ended and none of that
	// incident's resources remain, so that a relapse starts afresh.
	record *v1alpha1.UnhealthyNode
	// endedAt is the end mark the record carries: since when a recovering
	// node is healthy, or the mark its record has when every resource it
	// holds is left behind (leftBehind); while a relapsed node waits for
	// what its recovery deleted, that recovery's mark. Nil otherwise.
	endedAt *metav1.Time
	// healthySince is since when a recovering node is healthy: where its
	// healthyDelay counts from (healthyDelayStart).
	healthySince time.Time
	// keepsMark is true when a recovering node's record keeps its mark:
	// the resources outlived the incident that ended there.
	keepsMark bool
	// current is the running or held resource of the highest step, and
	// currentStep its step (-1: a step the spec no longer has).
	current     *Remediation
	currentStep int
	// next is the step to create after current or after the last step that
	// timed out; len(steps) when none is left.
	next int
	// started is true when a step is on record or has a resource.
	started bool
	// deleting is true when one of the node's resources is being deleted.
	deleting bool
	// resumed is the record of the step that runs, or runs next, whose
	// resource is gone though it never timed out: the step keeps the clock
	// it started with. Nil otherwise.
	resumed *v1alpha1.Remediation
	// recordedStart is the running step's start on record: earlier than
	// its resource's creation once the step was resumed.
	recordedStart time.Time
}

// incidentOf is the transition: from a node's record and what the cluster
// shows now (whether the node is healthy with resources left, since when
// its unhealthy condition holds, its resources), the incident now.
func incidentOf(r *rules, now time.Time, recovering bool, since time.Time, resources []Remediation, record *v1alpha1.UnhealthyNode) *incident {
	if recovering {
		inc := &incident{state: incidentRecovering, record: record, currentStep: -1,
			healthySince: healthyDelayStart(resources, record, now)}
		inc.endedAt = ptr.To(apiTime(inc.healthySince))
		if allLeftBehind(resources, record) {
			inc.endedAt, inc.keepsMark = endedAt(record).DeepCopy(), true
			// The delay's start tells these resources from a held
			// recovery's by coming after the mark (leftBehind): a second
			// after it at least, as both are kept in whole seconds.
			if floor := inc.endedAt.Add(time.Second); inc.healthySince.Before(floor) {
				inc.healthySince = floor
			}
		}
		return inc
	}
	if endedAt(record) != nil && len(resources) == 0 {
		// A relapse after the last incident's resources are gone.
		record = nil
	}
	inc := progressOf(r.steps, resources, record)
	deleting, undeleted := leftOver(r.healthyDelay, now, since, resources, record)
	if deleting || undeleted {
		inc.endedAt = endedAt(record).DeepCopy()
	}
	switch {
	case undeleted:
		inc.state = incidentBlocked
	case inc.current != nil:
		inc.state = incidentRunning
	case inc.deleting && heldStep(r.steps, since, resources, inc):
		inc.state = incidentHeld
	case inc.deleting && !goesOnBeside(r.steps, since, resources, inc):
		inc.state = incidentBlocked
	case inc.started && inc.next >= len(r.steps):
		inc.state = incidentExhausted
	case inc.started:
		inc.state = incidentNextStep
	default:
		inc.state = incidentDetected
	}
	return inc
}

// progressOf finds the running step and the next one from a node's
// resources and the steps its record shows timed out.
func progressOf(steps []step, resources []Remediation, record *v1alpha1.UnhealthyNode) *incident {
	inc := &incident{record: record, currentStep: -1}
	lastConsumed := -1
	for i := range resources {
		r := &resources[i]
		inc.started = true
		inc.deleting = inc.deleting || r.Deleting
		idx := stepOf(steps, &r.Ref, r.TemplateName)
		lastConsumed = max(lastConsumed, idx)
		if r.Deleting || timedOutAt(r, record) != nil {
			continue
		}
		if inc.current == nil || idx > inc.currentStep {
			inc.current, inc.currentStep = r, idx
		}
	}
	if record != nil {
		for _, rem := range record.Remediations {
			if rem.TimedOut != nil && !hasResource(resources, rem.Resource.UID) {
				inc.started = true
				lastConsumed = max(lastConsumed, stepOf(steps, &rem.Resource, rem.TemplateName))
			}
		}
	}
	inc.next = lastConsumed + 1
	inc.resumed = resumedRecord(steps, resources, inc)
	if inc.current != nil {
		if rem := entryRemediation(record, inc.current.Ref.UID); rem != nil {
			inc.recordedStart = rem.Started.Time
		}
	}
	inc.started = inc.started || inc.resumed != nil
	return inc
}

// resumedRecord finds the earliest record of the step that runs, or runs
// next, whose resource is gone before it timed out. A record whose
// incident ended has none: the controller deleted those resources.
func resumedRecord(steps []step, resources []Remediation, inc *incident) *v1alpha1.Remediation {
	if inc.record == nil || endedAt(inc.record) != nil {
		return nil
	}
	step := inc.next
	if inc.current != nil {
		step = inc.currentStep
	}
	var first *v1alpha1.Remediation
	for _, rem := range inc.record.Remediations {
		if rem == nil || rem.TimedOut != nil || hasResource(resources, rem.Resource.UID) || stepOf(steps, &rem.Resource, rem.TemplateName) != step {
			continue
		}
		if first == nil || rem.Started.Before(&first.Started) {
			first = rem
		}
	}
	return first
}

// heldStep makes the running step of a node whose resources are all being
// deleted the deleting resource of the highest step with a timeout that
// never timed out and is of this incident: deleted by its remediator or a
// user while the node stayed unhealthy, and held by a finalizer.
func heldStep(steps []step, since time.Time, resources []Remediation, inc *incident) bool {
	held, heldStep := (*Remediation)(nil), -1
	for i := range resources {
		r := &resources[i]
		idx := stepOf(steps, &r.Ref, r.TemplateName)
		if !r.Deleting || idx < 0 || steps[idx].timeout <= 0 || timedOutAt(r, inc.record) != nil || !ofThisIncident(r, since, inc.record) {
			continue
		}
		if idx > heldStep {
			held, heldStep = r, idx
		}
	}
	if held == nil {
		return false
	}
	inc.current, inc.currentStep = held, heldStep
	if rem := entryRemediation(inc.record, held.Ref.UID); rem != nil {
		inc.recordedStart = rem.Started.Time
	}
	return true
}

// goesOnBeside tells whether an escalation goes on while the node's other
// resources are being deleted: each is a step of this incident that timed
// out, and none has the kind and namespace of the step created next (the
// step resumed, or the one after it, or the next), so none can have its
// name.
func goesOnBeside(steps []step, since time.Time, resources []Remediation, inc *incident) bool {
	next := inc.next
	if inc.resumed != nil {
		next = stepOf(steps, &inc.resumed.Resource, inc.resumed.TemplateName)
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
		if !ofThisIncident(r, since, inc.record) || timedOutAt(r, inc.record) == nil || slices.ContainsFunc(upcoming, func(s step) bool {
			return s.kind == r.Ref.Kind && s.template.Namespace == r.Ref.Namespace
		}) {
			return false
		}
	}
	return true
}

// stepStarted is when the running step started: its resource's creation,
// or the step's first start on record when its resource was created again.
func (inc *incident) stepStarted() time.Time {
	started := inc.current.Created
	if inc.resumed != nil && inc.resumed.Started.Time.Before(started) {
		started = inc.resumed.Started.Time
	}
	if !inc.recordedStart.IsZero() && inc.recordedStart.Before(started) {
		started = inc.recordedStart
	}
	return started
}

// firstStartOnRecord is the incident's first start its record keeps: the
// earliest start of its steps; zero without one.
func (inc *incident) firstStartOnRecord() time.Time {
	var first time.Time
	if inc.record == nil {
		return first
	}
	for _, r := range inc.record.Remediations {
		if r != nil && !r.Started.IsZero() && (first.IsZero() || r.Started.Time.Before(first)) {
			first = r.Started.Time
		}
	}
	return first
}

// timesOutAt is when the step that runs, or the resumed step that runs
// next, times out by its timeout: zero when it has none.
func (inc *incident) timesOutAt(steps []step) time.Time {
	switch {
	case inc.current != nil && inc.currentStep >= 0 && steps[inc.currentStep].timeout > 0:
		return inc.stepStarted().Add(steps[inc.currentStep].timeout)
	case inc.current == nil && inc.resumed != nil && steps[inc.next].timeout > 0:
		return inc.resumed.Started.Add(steps[inc.next].timeout)
	}
	return time.Time{}
}

// stepEnd is when and how a node's step ends: the one that runs, or the
// resumed one that runs next.
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

// end says when the step that runs, or the resumed step that runs next,
// ends, given when its node lease is overdue (zero: it holds none).
func (inc *incident) end(steps []step, overdueAt time.Time) stepEnd {
	end := stepEnd{at: inc.timesOutAt(steps)}
	end.failed = !end.at.IsZero() && inc.current != nil && inc.current.Succeeded == metav1.ConditionFalse
	if !overdueAt.IsZero() && (end.at.IsZero() || overdueAt.Before(end.at)) {
		end.at, end.overdue = overdueAt, true
	}
	return end
}
