package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Explanation is what the engine says about one selected node: its state,
// what happens next, and why it waits, if it does.
type Explanation struct {
	Node  string
	State NodeState
	// Condition is the unhealthy condition that matches, with the time its
	// node condition changed (Since) and when its duration passes (Due).
	Condition *v1alpha1.UnhealthyCondition
	Since     time.Time
	Due       time.Time
	// ControlPlane and Excluded are the node's role and exclusion.
	ControlPlane bool
	Excluded     bool
	// CreatesNow is true when the plan creates the node's next remediation.
	CreatesNow bool
	// Waiting is why the node does not get a remediation it needs, Because
	// says it in words, and Remedy what an operator may do to end the wait
	// ("" for nothing but waiting).
	Waiting WaitReason
	Because string
	Remedy  string
	// RemediatedBy names the other NodeHealthCheck that remediates the node
	// instead of this one.
	RemediatedBy string
	// Step is the running step, from 1, of Steps; 0 when none runs.
	Step, Steps int
	// Resource is the running step's resource; the step started at
	// StepStarted (its first resource's creation, when it was created
	// again) and times out at StepTimesOut (zero: it runs until the node is
	// healthy).
	Resource     *corev1.ObjectReference
	StepStarted  time.Time
	StepTimesOut time.Time
	// HealthySince is when a recovering node was first seen healthy.
	HealthySince time.Time
	// HealthyDelayEnds is when healthyDelay releases a recovering node's
	// resources; zero when none holds them. NeedsConfirmation is true when a
	// negative healthyDelay waits for the manual confirmation.
	HealthyDelayEnds  time.Time
	NeedsConfirmation bool
}

// Explain explains the plan's verdict on every selected node that is not
// healthy, in input order.
func (p *Plan) Explain() []Explanation {
	creates := make(map[string]bool, len(p.Create))
	for _, c := range p.Create {
		creates[c.Node] = true
	}
	var explained []Explanation
	for i := range p.Nodes {
		v := &p.Nodes[i]
		if v.State == StateHealthy {
			continue
		}
		x := Explanation{
			Node: v.Node.Name, State: v.State, Condition: v.Condition, Since: v.Since, Due: v.Expires,
			ControlPlane: v.ControlPlane, Excluded: v.Excluded, CreatesNow: creates[v.Node.Name],
			Waiting: v.Waiting, Because: p.because(v), Remedy: remedy(v), Steps: len(p.rules.steps),
		}
		if v.RemediatedBy != nil {
			x.RemediatedBy = v.RemediatedBy.Name
		}
		if inc := v.incident; inc != nil && inc.current != nil {
			x.Step, x.Resource, x.StepStarted = inc.currentStep+1, &inc.current.Ref, inc.stepStarted()
			x.StepTimesOut = inc.timesOutAt(p.rules.steps)
		}
		if v.State == StateRecovering && v.HealthyDelayed {
			x.HealthySince = v.HealthySince
			if p.rules.healthyDelay < 0 {
				x.NeedsConfirmation = true
			} else {
				x.HealthyDelayEnds = v.HealthySince.Add(p.rules.healthyDelay)
			}
		}
		explained = append(explained, x)
	}
	return explained
}
