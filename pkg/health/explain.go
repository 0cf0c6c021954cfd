package health

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Why a node waits, in words, for kubectl nhc. The status reason's summary
// and the events say the same in their own grammar.
const (
	becauseMinHealthy   = "only %d of %d nodes are healthy and %d must be"
	becauseStorm        = "storm recovery holds back new remediations"
	becausePaused       = "the NodeHealthCheck is paused: %s"
	becauseExcluded     = "the node has the label " + v1alpha1.ExcludeFromRemediationLabel + "=true"
	becauseControlPlane = "another control-plane node is under remediation, and only one at a time may be"
	// becauseControlPlaneUnknown (why) is Input.ControlPlaneUnknown's wait.
	becauseControlPlaneUnknown = "only one control-plane node at a time may be under remediation, and not all of those under remediation are known yet: %s"
	becauseDisabled            = "the NodeHealthCheck is disabled: %s: %s"
	becauseDeletion            = "its previous remediation resource is still being deleted"
	becauseNoTemplate          = "every remediation step timed out or failed, and none is left to try"
	becauseOwnWrite            = "the controller's last write for this node is not visible yet"
	becauseNextBatch           = "the controller creates remediations in batches, and this one is in the next"
	becauseStatusWrite         = "the remediations created so far are not in the stored status yet, which the remediation guard reads; the next one waits for that status write"
	becauseStatusFull          = "the status remembers the remediations of %d nodes, as many as it can hold, and a new one starts when one of them ends"
	becauseLeaseHeld           = "its node lease %s is held by %s until %s (node maintenance or another remediation); it is remediated when the lease is released or expires"
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
	// Waiting is why the node does not get a remediation it needs, and
	// Because says it in words.
	Waiting WaitReason
	Because string
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
			Waiting: v.Waiting, Because: p.because(v), Steps: len(p.rules.steps),
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

// because says why a node waits.
func (p *Plan) because(v *NodeVerdict) string {
	switch v.Waiting {
	case WaitMinHealthy:
		return fmt.Sprintf(becauseMinHealthy, p.Healthy, p.Observed, p.Budget.MinHealthy)
	case WaitStorm:
		return becauseStorm
	case WaitPaused:
		return fmt.Sprintf(becausePaused, strings.Join(p.rules.pauseRequests, ", "))
	case WaitExcluded:
		return becauseExcluded
	case WaitControlPlane:
		return becauseControlPlane
	case WaitControlPlaneUnknown:
		return fmt.Sprintf(becauseControlPlaneUnknown, p.ControlPlaneUnknown)
	case WaitDisabled:
		if p.Problem != nil {
			return fmt.Sprintf(becauseDisabled, p.Problem.Reason, p.Problem.Message)
		}
	case WaitDeletion:
		return becauseDeletion
	case WaitNoTemplate:
		return becauseNoTemplate
	case WaitOwnWrite:
		return becauseOwnWrite
	case WaitNextBatch:
		return becauseNextBatch
	case WaitStatusWrite:
		return becauseStatusWrite
	case WaitStatusFull:
		return fmt.Sprintf(becauseStatusFull, p.Remediating)
	case WaitOverlap:
		if v.RemediatedBy != nil {
			return p.becauseOverlap(v.RemediatedBy, v.State == StateUnhealthy || v.State == StateSoonUnhealthy)
		}
	case WaitLeaseHeld:
		if v.Lease != nil {
			return fmt.Sprintf(becauseLeaseHeld, LeaseName(v.Node.Name), v.Lease.Holder, v.Lease.Expires().UTC().Format(time.RFC3339))
		}
	}
	return ""
}
