package cli

import (
	"fmt"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The verdicts kubectl nhc gives about a node.
const (
	verdictHealthy      = "healthy: no unhealthy condition matches"
	verdictNotSelected  = "not selected"
	verdictDue          = "unhealthy since %s; remediation due at %s (%s)"
	verdictCreatesNow   = "remediation due now: the controller creates it at its next sync"
	verdictWaiting      = "waiting: %s"
	verdictStep         = "under remediation: step %d of %d, %s %s/%s, running for %s"
	verdictTimesOut     = ", times out %s"
	verdictUntilHealthy = ", runs until the node is healthy"
	verdictSpent        = "every remediation step timed out or failed; the controller waits for the node to recover"
	verdictDelayed      = "healthy again since %s; healthyDelay keeps its remediation until %s (%s)"
	verdictConfirm      = "healthy again since %s; its remediation is kept until you confirm: kubectl annotate node %s %s=true"
	verdictCleanup      = "healthy again; its remediation resources are being deleted"
	verdictRelapsed     = "; its unhealthy condition changed, which does not escalate"
	verdictLeftTo       = "; NodeHealthCheck %s remediates it, not this one"
)

// verdict says in a sentence what the controller does with a node now.
func verdict(x *health.Explanation, now time.Time) string {
	if x == nil {
		return verdictHealthy
	}
	switch {
	case x.State == health.StateRecovering && x.NeedsConfirmation:
		return fmt.Sprintf(verdictConfirm, timestamp(x.HealthySince), x.Node, v1alpha1.ManuallyConfirmedHealthyAnnotation)
	case x.State == health.StateRecovering && !x.HealthyDelayEnds.IsZero():
		return fmt.Sprintf(verdictDelayed, timestamp(x.HealthySince), timestamp(x.HealthyDelayEnds), relative(x.HealthyDelayEnds, now))
	case x.State == health.StateRecovering:
		return verdictCleanup
	case x.Waiting == health.WaitNoTemplate:
		return verdictSpent
	case x.Step > 0:
		s := fmt.Sprintf(verdictStep, x.Step, x.Steps, x.Resource.Kind, x.Resource.Namespace, x.Resource.Name, age(x.StepStarted, now))
		if x.StepTimesOut.IsZero() {
			s += verdictUntilHealthy
		} else {
			s += fmt.Sprintf(verdictTimesOut, relative(x.StepTimesOut, now))
		}
		if x.State == health.StateSoonUnhealthy {
			s += verdictRelapsed
		}
		return s
	case x.State == health.StateSoonUnhealthy:
		s := fmt.Sprintf(verdictDue, timestamp(x.Since), timestamp(x.Due), relative(x.Due, now))
		if x.RemediatedBy != "" {
			s += fmt.Sprintf(verdictLeftTo, x.RemediatedBy)
		}
		return s
	case x.CreatesNow:
		return verdictCreatesNow
	case x.Waiting != health.WaitNone:
		s := fmt.Sprintf(verdictWaiting, x.Because)
		if x.Remedy != "" {
			s += "; " + x.Remedy
		}
		return s
	}
	return fmt.Sprintf(verdictDue, timestamp(x.Since), timestamp(x.Due), relative(x.Due, now))
}

// evaluation is the engine's plan for a NodeHealthCheck now, with its
// explanations by node.
type evaluation struct {
	in        health.Input
	plan      health.Plan
	explained map[string]*health.Explanation
}

func evaluate(in health.Input) *evaluation {
	e := &evaluation{in: in, plan: health.Evaluate(in), explained: map[string]*health.Explanation{}}
	explanations := e.plan.Explain()
	for i := range explanations {
		e.explained[explanations[i].Node] = &explanations[i]
	}
	return e
}
