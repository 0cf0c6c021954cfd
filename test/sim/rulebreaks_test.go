package sim

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
	"github.com/nodehealthcheck/nhc-controller/test/sim/gen"
)

// Rule-breaks the simulation found, as the generated histories that found
// them, shrunk (seed 630 with -sim.focus control-plane, seeds 4, 167, 2,
// 755, 7775, 18259, 19174, 19868, 1668, 15158, 6273 and those named,
// simplified): on the code before their fixes (the controller's, or the
// checker's for 12 and 17) each breaks its invariant, and none may again.
func TestRuleBreaks(t *testing.T) {
	for _, tt := range append(ruleBreaks, ruleBreaksOfTheSpecsDraws...) {
		t.Run(tt.name, func(t *testing.T) {
			h := gen.History{Seed: tt.seed, StatusBytes: tt.statusBytes, Steps: tt.steps}
			if v := Play(t, h); v != nil {
				t.Errorf("%v\n%s", v, h)
			}
		})
	}
}

// ruleBreak is a rule-break's history, shrunk: its steps, and the seed
// and status bound it was played with, where they matter.
type ruleBreak struct {
	name        string
	seed        uint64
	statusBytes int
	steps       []gen.Step
}

// breakDelay is the rule-breaks' healthyDelay, and the time their histories
// leave for the controller to settle after their last change.
var breakDelay = 2 * time.Minute

var ruleBreaks = []ruleBreak{
	{
		// Seed 630, focused on the control plane: cp-0's step timed
		// out, a restart, its remediator deleted the resource, cp-2
		// started, and cp-0's next step (the edited spec's) was created
		// beside it.
		name: "1: an escalation step on a control-plane node keeps the one-control-plane rule",
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-2", "cp"), template("Gamma", "gamma-1"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"b", "cp"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}),
			fail(0, "cp-0", "False"),
			{After: 2 * time.Minute, Op: gen.OpCrash},
			{Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveDelete},
			fail(0, "cp-2", "False"),
			{After: 30 * time.Second, Op: gen.OpEditNHC, NHC: "nhc-1", Spec: &gen.NHCSpec{Pools: []string{"a", "cp"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 30 * time.Second}}}},
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 4: one NodeHealthCheck's kind forbidden must not hold
		// another's control-plane remediations.
		name: "2: one broken remediator stops no control-plane remediation of another",
		steps: []gen.Step{
			cp("cp-0", "cp"), template("Gamma", "gamma-1"), template("Beta", "beta-1"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 30*time.Second), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}}),
			nhc("nhc-3", gen.NHCSpec{Pools: []string{"b"}, Conditions: ready("False", 30*time.Second), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
			{Op: gen.OpForbid, Kind: "Beta", On: true},
			fail(0, "cp-0", "False"),
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 167: the older NodeHealthCheck cannot act (its template
		// is missing); the younger one remediates the shared node.
		name: "3: an older overlapping NodeHealthCheck that cannot act does not keep the node",
		steps: []gen.Step{
			worker("worker-0", "a"), template("Alpha", "alpha-2"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: ready("False", 10*time.Second), MaxUnhealthy: "50%", Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
			nhc("nhc-3", gen.NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: ready("False", time.Minute), Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-2"}}}),
			fail(0, "worker-0", "False"),
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 2: a node that recovered and waits for healthyDelay is
		// no longer a step running: its lease is not renewed.
		name: "4: no lease is kept where nothing runs",
		steps: []gen.Step{
			worker("worker-0", "a"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", time.Minute), HealthyDelay: &breakDelay, Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
			fail(0, "worker-0", "False"),
			fail(time.Minute, "worker-0", "True"),
			{After: 5 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 755: the lease informer stalled while the step took its
		// lease; seen at last, long after, the lease must wake its
		// NodeHealthCheck, which no longer selects the node.
		name: "5: a lease of ours seen late is released",
		steps: []gen.Step{
			cp("cp-2", "cp"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"b"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}}),
			fail(time.Minute, "cp-2", "False"),
			{After: 15 * time.Second, Op: gen.OpWatchBreak},
			{Op: gen.OpWatchStall, Resource: "leases"},
			{Op: gen.OpEditNHC, NHC: "nhc-1", Spec: &gen.NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 3 * time.Minute}}}},
			{After: 30 * time.Second, Op: gen.OpRelabel, Node: "cp-2", Pool: "a"},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 7775: the first step's resource held by its remediator's
		// finalizer and deleted by it, the watches broken and compacted
		// meanwhile: the second step must come one timeout after the
		// first started.
		name: "6: a step whose resource is deleted but held by a finalizer times out",
		steps: []gen.Step{
			worker("worker-2", "b"), template("Alpha", "alpha-1"), template("Alpha", "alpha-2"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"a", "b", "cp"}, Conditions: ready("False", 30*time.Second), Paused: true,
				Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-1", Timeout: time.Minute}, {Kind: "Alpha", Template: "alpha-2", Timeout: 3 * time.Minute}}}),
			{Op: gen.OpPause, NHC: "nhc-2", On: false},
			fail(0, "worker-2", "False"),
			{After: 15 * time.Second, Op: gen.OpWatchBreak, On: true},
			{After: 15 * time.Second, Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveFinalize},
			{Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveDelete},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 18259: cp-0's first step, held by its remediator's
		// finalizer, went on past its timeout once the node's Ready
		// went from Unknown to False (the condition then started after
		// the step): the next step must still come on the step's clock.
		name: "7: a held step times out after the node's unhealthy condition changed",
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-1", "cp"), template("Alpha", "alpha-1"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp"}, Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: 10 * time.Second}, {Type: "Ready", Status: "Unknown", Duration: 20 * time.Second}},
				MaxUnhealthy: "1", Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: 30 * time.Second}, {Kind: "Alpha", Template: "alpha-1", Timeout: 3 * time.Minute}}}),
			fail(0, "cp-0", "Unknown"),
			fail(5*time.Second, "cp-1", "True"),
			fail(15*time.Second, "cp-1", "Unknown"),
			{Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveFinalize},
			{Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveDelete},
			{After: time.Minute, Op: gen.OpCondition, Node: "cp-0", Condition: "Ready", Status: "False", Skew: -30 * time.Second},
			fail(0, "cp-1", "True"),
			{After: 7500 * time.Millisecond, Op: gen.OpRole, Node: "cp-1", ControlPlane: false},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 19174: step 1 held by its finalizer timed out, step 2's
		// resource was deleted outright by its remediator, and the
		// node waited for step 1's deletion instead of creating step 2
		// again.
		name: "8: a step whose resource is gone is created again beside a timed-out step held by a finalizer",
		steps: []gen.Step{
			worker("worker-0", "a"), template("Alpha", "alpha-2"), template("Beta", "beta-1"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: 10 * time.Second}, {Type: "Ready", Status: "Unknown", Duration: time.Minute}},
				HealthyDelay: ptr.To(-time.Second),
				Steps:        []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: 3 * time.Minute}, {Kind: "Alpha", Template: "alpha-2", Timeout: 3 * time.Minute}}}),
			{Op: gen.OpCondition, Node: "worker-0", Condition: "Ready", Status: "False", Skew: -30 * time.Second},
			{After: 15 * time.Second, Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveFinalize},
			{Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveDelete},
			{After: 15 * time.Second, Op: gen.OpWatchBreak, On: true},
			{After: 2*time.Minute + 45*time.Second, Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveDelete},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 19868: nhc-2's step 1 was deleted by its remediator as
		// cp-1 turned Ready=False, which the older nhc-1 (whose budget
		// never allows a remediation) matches too: nhc-1 took the node,
		// and step 1 never came back nor timed out.
		name: "9: a remediator deleting its resource does not hand the node to another NodeHealthCheck",
		steps: []gen.Step{
			cp("cp-1", "cp"), template("Alpha", "alpha-1"), template("Beta", "beta-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a", "cp"}, Conditions: ready("False", 10*time.Second), MinHealthy: "1",
				Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"cp", "b"}, Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: 30 * time.Second}, {Type: "Ready", Status: "Unknown", Duration: 20 * time.Second}},
				MaxUnhealthy: "67%", StormCooldown: 30 * time.Second,
				Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-1", Timeout: 3 * time.Minute}, {Kind: "Gamma", Template: "gamma-1", Timeout: 30 * time.Second}}}),
			fail(0, "cp-1", "Unknown"),
			{After: 30 * time.Second, Op: gen.OpFaults, Fault: apiserver.FaultLostAnswer, Duration: 5 * time.Second},
			fail(0, "cp-1", "False"),
			{Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveDelete},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 1668: cp-2 recovered as its first step was created, the
		// remediator held the deleted step with its finalizer, and the
		// node relapsed; seen before the condition's duration passed,
		// the relapse lost the recovery's mark, and the old step's
		// clock started the second step at once.
		name: "10: a relapse seen within its condition's duration starts again at the first step",
		steps: []gen.Step{
			cp("cp-2", "cp"), template("Alpha", "alpha-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", time.Minute),
				Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 3 * time.Minute}, {Kind: "Alpha", Template: "alpha-1", Timeout: 3 * time.Minute}}}),
			fail(0, "cp-2", "False"),
			{After: 45 * time.Second, Op: gen.OpTemplate, Kind: "Gamma", Template: "gamma-1", On: true},
			{After: 15 * time.Second, Op: gen.OpRemediator, Kind: "Gamma", Behaviour: gen.BehaveFinalize},
			fail(0, "cp-2", "True"),
			fail(5625*time.Millisecond, "cp-2", "False"),
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 15158: worker-1's first step failed at once and the
		// second, held by its remediator's finalizer, was deleted as
		// the node recovered; the node relapsed, and once the deletion
		// ended, it went on after the failed step of the incident
		// before instead of starting again.
		name: "11: a relapse after the recovery's deletions ended starts at the first step",
		steps: []gen.Step{
			worker("worker-1", "a"), template("Alpha", "alpha-1"), template("Alpha", "alpha-2"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: time.Minute}, {Type: "Ready", Status: "Unknown", Duration: time.Minute}},
				Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: 3 * time.Minute}, {Kind: "Alpha", Template: "alpha-1", Timeout: time.Minute}, {Kind: "Alpha", Template: "alpha-2", Timeout: 3 * time.Minute}}}),
			fail(0, "worker-1", "False"),
			{After: time.Minute, Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveFail},
			{Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveFinalize},
			fail(0, "worker-1", "True"),
			fail(5*time.Second, "worker-1", "Unknown"),
			{Op: gen.OpRemediator, Kind: "Alpha", Behaviour: gen.BehaveRelease},
			{After: 10 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 6273, simplified: the node recovered while its
		// remediation's kind was forbidden; the checker expected the
		// deletion healthyDelay after the recovery, though the controller
		// can stamp the resource, and start the breakDelay, only once it can
		// read the kind again. The checker's fault, not the controller's.
		name: "12: healthyDelay counts from when the resource's kind can be read",
		steps: []gen.Step{
			worker("worker-1", "a"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}, HealthyDelay: &breakDelay}),
			fail(0, "worker-1", "False"),
			{After: 30 * time.Second, Op: gen.OpForbid, Kind: "Gamma", On: true},
			{Op: gen.OpWatchBreak},
			fail(30*time.Second, "worker-1", "True"),
			{After: breakDelay, Op: gen.OpForbid, Kind: "Gamma", On: false},
			{After: 2*breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Found by review: a node relabelled out of its NodeHealthCheck
		// and back in while its remediator's finalizer held the step
		// the controller deleted as an orphan. The deselection ended
		// the incident; the held resource is none of the next one's.
		name: "13: a node selected again starts at the first step, whatever holds the orphan's resource",
		steps: []gen.Step{
			worker("worker-0", "a"), template("Gamma", "gamma-1"), template("Alpha", "alpha-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", 10*time.Second),
				Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: time.Minute}, {Kind: "Alpha", Template: "alpha-1", Timeout: 3 * time.Minute}}}),
			fail(0, "worker-0", "False"),
			{After: 15 * time.Second, Op: gen.OpRemediator, Kind: "Gamma", Behaviour: gen.BehaveFinalize},
			{After: 15 * time.Second, Op: gen.OpRelabel, Node: "worker-0", Pool: "b"},
			{After: time.Minute, Op: gen.OpRelabel, Node: "worker-0", Pool: "a"},
			{After: 2 * time.Minute, Op: gen.OpRemediator, Kind: "Gamma", Behaviour: gen.BehaveRelease},
			{After: 5 * time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 47160: cp-0's second step's kind was forbidden while cp-0
		// recovered and its remediator deleted the resource; once the
		// kind was readable again cp-1 failed, and was never remediated.
		name: "14: a control-plane node is remediated once another's step deleted while its kind was forbidden is gone",
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-1", "cp"), template("Beta", "beta-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"b", "cp"}, Conditions: ready("False", time.Minute), MaxUnhealthy: "67%", Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-2", Timeout: time.Minute}}, HealthyDelay: &breakDelay}),
			{Op: gen.OpEditNHC, NHC: "nhc-1", Spec: &gen.NHCSpec{Pools: []string{"cp", "a"}, Conditions: ready("False", 10*time.Second),
				Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: time.Minute}, {Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}},
			fail(0, "cp-0", "False"),
			{After: 2 * time.Minute, Op: gen.OpForbid, Kind: "Beta", On: true},
			fail(0, "cp-0", "True"),
			{Op: gen.OpRemediator, Kind: "Beta", Behaviour: gen.BehaveDelete},
			{After: 15 * time.Second, Op: gen.OpForbid, Kind: "Beta", On: false},
			fail(0, "cp-1", "False"),
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 53831: the API server answered 500 to cp-1's create; its
		// fate was looked up only a minute later, and until then no other
		// node was remediated.
		name: "15: nodes that fail while the API server answers 500 are remediated once it recovers",
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-1", "cp"), worker("worker-0", "a"), worker("worker-2", "b"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp", "a", "b"},
				Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: 10 * time.Second}, {Type: "Ready", Status: "Unknown", Duration: 20 * time.Second}},
				Steps:      []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1"}}}),
			{Op: gen.OpFaults, Fault: apiserver.FaultInternal, Duration: 30 * time.Second},
			fail(0, "worker-0", "Unknown"), fail(0, "cp-1", "Unknown"),
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 501: cp-0's remediator refused its resource; the plan that
		// retried cp-0 each time held cp-2 behind it, one control-plane
		// node at a time, and no plan came between.
		name: "16: a control-plane node whose remediation a webhook refuses holds no other control-plane node back",
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-1", "cp"), cp("cp-2", "cp"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 30*time.Second), MinHealthy: "1",
				Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
			fail(0, "cp-0", "False"),
			{Op: gen.OpDeny, Kind: "Beta", Node: "cp-0", On: true},
			fail(0, "cp-2", "False"),
			{After: breakDelay + time.Minute, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
	{
		// Seed 41007: a create tried again during a partition took the
		// node's lease, its write parked until the partition ended, while
		// its confirmation was refused: a renewal for a step about to
		// start, which the checker dated by its landing and missed.
		name: "17: a lease taken for a create whose confirmation a partition refused is a try to start a step",
		steps: []gen.Step{
			worker("worker-0", "a"), template("Alpha", "alpha-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", 10*time.Second),
				Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-1", Timeout: time.Minute}, {Kind: "Gamma", Template: "gamma-1", Timeout: 3 * time.Minute}}}),
			{Op: gen.OpDeny, Kind: "Gamma", Node: "worker-0", On: true},
			fail(0, "worker-0", "False"),
			{After: 98 * time.Second, Op: gen.OpPartition, Duration: 5 * time.Second},
			{After: 30 * time.Second, Op: gen.OpPartition, Duration: 5 * time.Second},
			{After: breakDelay, Op: gen.OpFaults, Fault: apiserver.FaultNone},
		},
	},
}

// The rule-breaks' steps.

func cp(node, pool string) gen.Step {
	return gen.Step{Op: gen.OpAddNode, Node: node, Pool: pool, ControlPlane: true}
}

func worker(node, pool string) gen.Step { return gen.Step{Op: gen.OpAddNode, Node: node, Pool: pool} }

func template(k cluster.Kind, name string) gen.Step {
	return gen.Step{Op: gen.OpTemplate, Kind: k, Template: name, On: true}
}

func nhc(name string, spec gen.NHCSpec) gen.Step {
	return gen.Step{Op: gen.OpCreateNHC, NHC: name, Spec: &spec}
}

func fail(after time.Duration, node, status string) gen.Step {
	return gen.Step{After: after, Op: gen.OpCondition, Node: node, Condition: "Ready", Status: status}
}

func ready(status string, d time.Duration) []gen.ConditionSpec {
	return []gen.ConditionSpec{{Type: "Ready", Status: status, Duration: d}}
}
