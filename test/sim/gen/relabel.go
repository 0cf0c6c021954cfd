package gen

import (
	"maps"
	"slices"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// heldRelabelOdds is one in how many unhealthy nodes an operator
// relabels out of their NodeHealthChecks and back in while a remediator
// holds their resource: rarer than a relabelling, common enough that an
// incident's end at a deselection meets every escalation rule.
const heldRelabelOdds = 40

// parkedPool is the pool of nodes an operator took out of every
// NodeHealthCheck: none selects it.
const parkedPool = "parked"

// relabelBack draws, after a node is relabelled to another pool, whether
// it is relabelled back soon: its incident ended when its NodeHealthCheck
// stopped selecting it, while the resources deleted then may still be
// held, and a node selected again starts afresh.
func (g *generator) relabelBack(s Step) (Step, bool) {
	if s.Op == OpAddNode {
		g.pools[s.Node] = s.Pool
	}
	if s.Op != OpRelabel {
		return Step{}, false
	}
	from, known := g.pools[s.Node]
	g.pools[s.Node] = s.Pool
	if !known || from == s.Pool || g.returns.IntN(2) != 0 {
		return Step{}, false
	}
	after := []time.Duration{5 * time.Second, 20 * time.Second, time.Minute}[g.returns.IntN(3)]
	g.pools[s.Node] = from
	return Step{After: after, Op: OpRelabel, Node: s.Node, Pool: from}, true
}

// track keeps the NodeHealthChecks' specs as the cluster will have them:
// a create of one that exists and an edit of one that does not change
// nothing.
func (g *generator) track(s Step) {
	_, exists := g.specs[s.NHC]
	switch {
	case s.Op == OpCreateNHC && !exists, s.Op == OpEditNHC && exists:
		g.specs[s.NHC] = s.Spec
	case s.Op == OpDeleteNHC:
		delete(g.specs, s.NHC)
	}
}

// relabelWhileHeld draws, after a node turns unhealthy, whether an
// operator moves it out of its pool for a while (to look at it, or to
// keep other automation off it) and back in while it is still unhealthy,
// as its remediators hold their resources with a finalizer the way
// self-node-remediation and fence-agents-remediation do. The incident
// ended at the relabelling, the held resource stays being deleted, and
// the node selected again must start at its first step on a fresh clock.
// Sometimes the remediators let go of their resources a while later.
func (g *generator) relabelWhileHeld(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known || g.holds.IntN(heldRelabelOdds) != 0 {
		return nil
	}
	kinds, away := g.remediatorsOf(pool)
	if len(kinds) == 0 {
		return nil
	}
	steps := remediatorsDo(kinds, BehaveFinalize, []time.Duration{45 * time.Second, 90 * time.Second, 2 * time.Minute}[g.holds.IntN(3)])
	steps = append(steps,
		Step{After: []time.Duration{0, 10 * time.Second, 30 * time.Second}[g.holds.IntN(3)], Op: OpRelabel, Node: s.Node, Pool: away[g.holds.IntN(len(away))]},
		Step{After: []time.Duration{5 * time.Second, 20 * time.Second, time.Minute, 2 * time.Minute}[g.holds.IntN(4)], Op: OpRelabel, Node: s.Node, Pool: pool})
	if g.holds.IntN(2) == 0 {
		steps = append(steps, remediatorsDo(kinds, BehaveRelease, []time.Duration{30 * time.Second, 2 * time.Minute, 5 * time.Minute}[g.holds.IntN(3)])...)
	}
	return steps
}

// remediatorsOf is the kinds of the steps of the NodeHealthChecks that
// select a pool, and where an operator takes a node out of them: the
// other pools none of them selects, and one no NodeHealthCheck selects.
func (g *generator) remediatorsOf(pool string) ([]cluster.Kind, []string) {
	var kinds []cluster.Kind
	away := append(slices.DeleteFunc(slices.Clone(pools), func(p string) bool { return p == pool }), parkedPool)
	for _, name := range slices.Sorted(maps.Keys(g.specs)) {
		spec := g.specs[name]
		if !slices.Contains(spec.Pools, pool) {
			continue
		}
		for _, step := range spec.Steps {
			if !slices.Contains(kinds, step.Kind) {
				kinds = append(kinds, step.Kind)
			}
		}
		away = slices.DeleteFunc(away, func(p string) bool { return slices.Contains(spec.Pools, p) })
	}
	return kinds, away
}

// replacedRelabelOdds is one in how many unhealthy nodes an operator
// relabels while their remediator expects to replace them.
const replacedRelabelOdds = 20

// relabelWhileReplaced draws, after a node turns unhealthy and once its
// remediation runs, its remediators reporting that they expect to replace
// the node (PermanentNodeDeletionExpected), then an operator taking the
// node out of its NodeHealthChecks' selectors and back seconds later, still
// unhealthy. The controller leaves the resource to its remediator: the
// deselection ended the incident, whatever healthyDelay, and the node
// selected again starts afresh, never on the old step's clock. With
// relapses, the node selected again sometimes reports Ready and fails
// again moments later, while healthyDelay holds the resource: still no
// incident of that resource's.
func (g *generator) relabelWhileReplaced(s Step, relapses bool) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known || g.replaces.IntN(replacedRelabelOdds) != 0 {
		return nil
	}
	kinds, away := g.remediatorsOf(pool)
	if len(kinds) == 0 {
		return nil
	}
	steps := remediatorsDo(kinds, BehaveExpectDeletion, []time.Duration{45 * time.Second, 90 * time.Second, 2 * time.Minute}[g.replaces.IntN(3)])
	steps = append(steps,
		Step{After: []time.Duration{time.Second, 10 * time.Second}[g.replaces.IntN(2)], Op: OpRelabel, Node: s.Node, Pool: away[g.replaces.IntN(len(away))]},
		Step{After: []time.Duration{5 * time.Second, 20 * time.Second}[g.replaces.IntN(2)], Op: OpRelabel, Node: s.Node, Pool: pool})
	if relapses && g.replaces.IntN(2) == 0 {
		steps = append(steps,
			Step{After: []time.Duration{0, 5 * time.Second}[g.replaces.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: "True"},
			Step{After: []time.Duration{0, 3 * time.Second}[g.replaces.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: s.Status})
	}
	return steps
}

// remediatorsDo is the remediators of kinds each behaving so, the first
// after a while, the others at the same instant.
func remediatorsDo(kinds []cluster.Kind, b Behaviour, after time.Duration) []Step {
	steps := make([]Step, 0, len(kinds))
	for _, k := range kinds {
		steps = append(steps, Step{After: after, Op: OpRemediator, Kind: k, Behaviour: b})
		after = 0
	}
	return steps
}
