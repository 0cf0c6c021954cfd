package sim

import (
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/gen"
)

// Rule-breaks found once the generator drew the shapes in which the spec
// is easiest to misread (gen's spread.go), shrunk: on the code before
// their fixes (the checker's for 18 and 19) each breaks its invariant.
var ruleBreaksOfTheSpecsDraws = []ruleBreak{
	{
		// Seed 1040: a step without a timeout, created after the spec was
		// edited, runs three lease durations from its own start, not from
		// the lease taken for the step before it.
		name: "18: a step without a timeout runs its lease's time from its own start",
		seed: 1040,
		steps: []gen.Step{
			cp("cp-1", "cp"), template("Alpha", "alpha-1"), template("Beta", "beta-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp", "b"}, Conditions: ready("False", time.Minute), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}),
			fail(0, "cp-1", "False"),
			{After: 2 * time.Minute, Op: gen.OpEditNHC, NHC: "nhc-1", Spec: &gen.NHCSpec{Pools: []string{"cp", "b"}, Conditions: ready("False", time.Minute), Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-1"}}}},
			{After: 8 * time.Minute, Op: gen.OpExclude, Node: "cp-1", On: false},
		},
	},
	{
		// Seed 10106: a confirmation given while the node was unhealthy,
		// deselected and selected again, confirms its recovery: an
		// orphan's deletion consumes none.
		name: "19: an orphan's deletion consumes no confirmation",
		seed: 10106,
		steps: []gen.Step{
			worker("worker-2", "b"), template("Beta", "beta-1"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"b"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1"}}}),
			fail(0, "worker-2", "False"),
			{After: 15 * time.Second, Op: gen.OpConfirm, Node: "worker-2"},
			{Op: gen.OpRelabel, Node: "worker-2", Pool: "a"},
			{After: 1250 * time.Millisecond, Op: gen.OpRelabel, Node: "worker-2", Pool: "b"},
			{After: time.Second, Op: gen.OpCondition, Node: "worker-2", Condition: "Ready", Status: "True"},
			{After: breakDelay, Op: gen.OpExclude, Node: "worker-2", On: false},
		},
	},
	{
		// Seed 1743: the older NodeHealthCheck, paused, left the node to
		// the younger, which created its step; unpaused, the older's step
		// on record (its resource deleted by its remediator) took the node
		// back from the younger's resource, whose step then never timed
		// out. Resources come before a step on record.
		name: "20: a NodeHealthCheck with resources keeps the node from an older one's step on record",
		seed: 1743,
		steps: []gen.Step{
			worker("worker-0", "a"), worker("worker-1", "a"), template("Beta", "beta-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a", "b"}, Conditions: ready("False", 30*time.Second), MaxUnhealthy: "1",
				Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: 3 * time.Minute}, {Kind: "Beta", Template: "beta-1", Timeout: 30 * time.Second}}, HealthyDelay: ptr.To(2 * time.Minute)}),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"cp", "a", "b"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: time.Minute}}}),
			fail(0, "worker-1", "False"),
			fail(30*time.Second, "worker-0", "True"),
			fail(0, "worker-0", "False"),
			{Op: gen.OpRemediator, Kind: "Gamma", Behaviour: gen.BehaveDelete},
			{Op: gen.OpPause, NHC: "nhc-1", On: true},
			{Op: gen.OpPause, NHC: "nhc-1", On: false},
			{After: breakDelay + time.Minute, Op: gen.OpExclude, Node: "worker-1", On: false},
		},
	},
	{
		// Seed 17037: a control-plane create a webhook refused held the
		// one control-plane slot while in flight, at the instant another
		// NodeHealthCheck's sync looked; nothing woke that one when the
		// slot was free again, and its node waited a minute.
		name: "21: a refused control-plane create wakes the NodeHealthChecks its slot held back",
		seed: 17037, statusBytes: 500,
		steps: []gen.Step{
			cp("cp-0", "cp"), cp("cp-1", "cp"), cp("cp-2", "cp"), worker("worker-0", "a"),
			template("Alpha", "alpha-2"), template("Beta", "beta-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp", "a"}, Conditions: ready("False", 10*time.Second), Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: 3 * time.Minute}}}),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"a", "cp"}, Conditions: []gen.ConditionSpec{{Type: "Ready", Status: "False", Duration: time.Minute}, {Type: "Ready", Status: "Unknown", Duration: time.Minute}},
				Steps: []gen.TemplateStep{{Kind: "Beta", Template: "beta-1", Timeout: 30 * time.Second}, {Kind: "Alpha", Template: "alpha-2", Timeout: time.Minute}, {Kind: "Gamma", Template: "gamma-1", Timeout: 30 * time.Second}}}),
			fail(0, "cp-2", "Unknown"), fail(0, "cp-1", "Unknown"), fail(0, "worker-0", "Unknown"),
			{After: 5 * time.Second, Op: gen.OpCondition, Node: "cp-0", Condition: "Ready", Status: "False", Skew: 20 * time.Second},
			{Op: gen.OpDeny, Kind: "Beta", Node: "cp-0", On: true},
			{After: time.Minute, Op: gen.OpRole, Node: "cp-1", ControlPlane: false},
			fail(0, "cp-1", "True"),
			{After: breakDelay + time.Minute, Op: gen.OpExclude, Node: "worker-0", On: false},
		},
	},
	{
		// Seed 26416: the status write that recorded the remediation
		// landed but its answer was lost, under a stalled watch of
		// NodeHealthChecks, so every later write conflicted; the step
		// timed out unrecorded, its remediator deleted the resource, and
		// the step was created again from the old status. The controller
		// now reads the NodeHealthCheck at the API server after a
		// conflict.
		name: "22: a status the cache is behind on is read at the API server before the next sync",
		seed: 26416,
		steps: []gen.Step{
			worker("worker-0", "a"), template("Gamma", "gamma-1"),
			nhc("nhc-2", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", time.Minute), Steps: []gen.TemplateStep{{Kind: "Gamma", Template: "gamma-1", Timeout: time.Minute}}, HealthyDelay: ptr.To(2 * time.Minute)}),
			{Op: gen.OpCrash},
			fail(16*time.Second, "worker-0", "False"),
			{Op: gen.OpWatchStall, Resource: "nodehealthchecks"},
			{After: 45 * time.Second, Op: gen.OpFaults, Fault: apiserver.FaultLostAnswer, Duration: 30 * time.Second},
			{After: 75 * time.Second, Op: gen.OpRemediator, Kind: "Gamma", Behaviour: gen.BehaveDelete},
			{After: breakDelay, Op: gen.OpExclude, Node: "worker-0", On: false},
		},
	},
	{
		// Seed 32765: a NodeHealthCheck deleted and created again under
		// its name while its create for cp-0 was not shown yet (the
		// watch of its kind stalled); the new one's every create waited
		// for that write as if it were its own (the remediation guard's
		// one blind create) until it lapsed. It holds cp-0 alone.
		name: "23: a create of an earlier NodeHealthCheck of the name holds its node only",
		seed: 32765,
		steps: []gen.Step{
			cp("cp-0", "cp"), worker("worker-0", "a"), template("Alpha", "alpha-1"), template("Beta", "beta-1"), template("Gamma", "gamma-1"),
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"cp"}, Conditions: ready("False", 30*time.Second), Steps: []gen.TemplateStep{{Kind: "Alpha", Template: "alpha-1"}}}),
			fail(0, "worker-0", "False"),
			fail(16250*time.Millisecond, "cp-0", "False"),
			{Op: gen.OpWatchStall, Resource: "alpharemediations"},
			{After: 30 * time.Second, Op: gen.OpDeleteNHC, NHC: "nhc-1"},
			nhc("nhc-1", gen.NHCSpec{Pools: []string{"a"}, Conditions: ready("False", time.Minute), Steps: []gen.TemplateStep{
				{Kind: "Alpha", Template: "alpha-1", Timeout: 30 * time.Second}, {Kind: "Gamma", Template: "gamma-1", Timeout: time.Minute}, {Kind: "Beta", Template: "beta-1", Timeout: 30 * time.Second}}}),
			{After: breakDelay, Op: gen.OpExclude, Node: "worker-0", On: false},
		},
	},
}
