package sim

import (
	"testing"
	"time"
)

// Rule-breaks the simulation found, as the generated histories that found
// them, shrunk (seed 630 with -sim.focus control-plane, seeds 4, 167, 2 and
// 755, simplified): on the code before their fixes each breaks its
// invariant, and none may again.
func TestRuleBreaks(t *testing.T) {
	cp := func(node, pool string) Step { return Step{Op: OpAddNode, Node: node, Pool: pool, ControlPlane: true} }
	worker := func(node, pool string) Step { return Step{Op: OpAddNode, Node: node, Pool: pool} }
	template := func(k Kind, name string) Step { return Step{Op: OpTemplate, Kind: k, Template: name, On: true} }
	nhc := func(name string, spec NHCSpec) Step { return Step{Op: OpCreateNHC, NHC: name, Spec: &spec} }
	fail := func(after time.Duration, node, status string) Step {
		return Step{After: after, Op: OpCondition, Node: node, Condition: "Ready", Status: status}
	}
	ready := func(status string, d time.Duration) []ConditionSpec {
		return []ConditionSpec{{Type: "Ready", Status: status, Duration: d}}
	}
	delay := 2 * time.Minute
	for _, tt := range []struct {
		name  string
		steps []Step
	}{
		{
			// Seed 630, focused on the control plane: cp-0's step timed
			// out, a restart, its remediator deleted the resource, cp-2
			// started, and cp-0's next step (the edited spec's) was created
			// beside it.
			name: "1: an escalation step on a control-plane node keeps the one-control-plane rule",
			steps: []Step{
				cp("cp-0", "cp"), cp("cp-2", "cp"), template("Gamma", "gamma-1"), template("Beta", "beta-1"),
				nhc("nhc-1", NHCSpec{Pools: []string{"b", "cp"}, Conditions: ready("False", 10*time.Second), Steps: []TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}),
				fail(0, "cp-0", "False"),
				{After: 2 * time.Minute, Op: OpCrash},
				{Op: OpRemediator, Kind: "Beta", Behaviour: BehaveDelete},
				fail(0, "cp-2", "False"),
				{After: 30 * time.Second, Op: OpEditNHC, NHC: "nhc-1", Spec: &NHCSpec{Pools: []string{"a", "cp"}, Conditions: ready("False", 10*time.Second), Steps: []TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 30 * time.Second}}}},
				{After: delay + time.Minute, Op: OpFaults, Fault: faultNone},
			},
		},
		{
			// Seed 4: one NodeHealthCheck's kind forbidden must not hold
			// another's control-plane remediations.
			name: "2: one broken remediator stops no control-plane remediation of another",
			steps: []Step{
				cp("cp-0", "cp"), template("Gamma", "gamma-1"), template("Beta", "beta-1"),
				nhc("nhc-2", NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 30*time.Second), Steps: []TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}}),
				nhc("nhc-3", NHCSpec{Pools: []string{"b"}, Conditions: ready("False", 30*time.Second), Steps: []TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
				{Op: OpForbid, Kind: "Beta", On: true},
				fail(0, "cp-0", "False"),
				{After: delay + time.Minute, Op: OpFaults, Fault: faultNone},
			},
		},
		{
			// Seed 167: the older NodeHealthCheck cannot act (its template
			// is missing); the younger one remediates the shared node.
			name: "3: an older overlapping NodeHealthCheck that cannot act does not keep the node",
			steps: []Step{
				worker("worker-0", "a"), template("Alpha", "alpha-2"),
				nhc("nhc-2", NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: ready("False", 10*time.Second), MaxUnhealthy: "50%", Steps: []TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
				nhc("nhc-3", NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: ready("False", time.Minute), Steps: []TemplateStep{{Kind: "Alpha", Template: "alpha-2"}}}),
				fail(0, "worker-0", "False"),
				{After: delay + time.Minute, Op: OpFaults, Fault: faultNone},
			},
		},
		{
			// Seed 2: a node that recovered and waits for healthyDelay is
			// no longer a step running: its lease is not renewed.
			name: "4: no lease is kept where nothing runs",
			steps: []Step{
				worker("worker-0", "a"), template("Beta", "beta-1"),
				nhc("nhc-1", NHCSpec{Pools: []string{"a"}, Conditions: ready("False", time.Minute), HealthyDelay: &delay, Steps: []TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
				fail(0, "worker-0", "False"),
				fail(time.Minute, "worker-0", "True"),
				{After: 5 * time.Minute, Op: OpFaults, Fault: faultNone},
			},
		},
		{
			// Seed 755: the lease informer stalled while the step took its
			// lease; seen at last, long after, the lease must wake its
			// NodeHealthCheck, which no longer selects the node.
			name: "5: a lease of ours seen late is released",
			steps: []Step{
				cp("cp-2", "cp"), template("Gamma", "gamma-1"),
				nhc("nhc-1", NHCSpec{Pools: []string{"b"}, Conditions: ready("False", 10*time.Second), Steps: []TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}}),
				fail(time.Minute, "cp-2", "False"),
				{After: 15 * time.Second, Op: OpWatchBreak},
				{Op: OpWatchStall, Resource: "leases"},
				{Op: OpEditNHC, NHC: "nhc-1", Spec: &NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 10*time.Second), Steps: []TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 3 * time.Minute}}}},
				{After: 30 * time.Second, Op: OpRelabel, Node: "cp-2", Pool: "a"},
				{After: 10 * time.Minute, Op: OpFaults, Fault: faultNone},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if v := Play(t, History{Steps: tt.steps}); v != nil {
				t.Errorf("%v\n%s", v, History{Steps: tt.steps})
			}
		})
	}
}
