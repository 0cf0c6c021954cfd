package gen

import (
	"maps"
	"slices"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The shapes in which the spec is easiest to misread, drawn on streams of
// their own after the step that invites them: a storm as one comes,
// nodes failing seconds apart and conditions that flap for less than
// their duration; a pause across a storm's edge, long enough for a step
// held by it to be created more than three of its timeouts after the one
// before timed out, or refused by its remediator's webhook for as long; and
// a manual confirmation of a recovery whose
// resource a remediator's finalizer holds, followed by a relapse.

// spreadOdds, flapOdds, pauseOdds and heldConfirmOdds are one in how many
// of the steps that invite each shape draw it.
const (
	spreadOdds      = 6
	flapOdds        = 8
	pauseOdds       = 12
	heldConfirmOdds = 6
	lateStepOdds    = 8
)

// spread draws, after a node turns unhealthy, more nodes of its pool
// failing seconds apart (a storm as one comes, its nodes' conditions
// expiring apart), or its condition flapping back for less than the
// shortest duration a spec draws, and failing again.
func (g *generator) spread(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known {
		return nil
	}
	var steps []Step
	if g.spreads.IntN(spreadOdds) == 0 {
		for _, node := range g.othersOf(pool, s.Node) {
			if g.spreads.IntN(3) == 0 {
				continue
			}
			after := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 6 * time.Second}[g.spreads.IntN(4)]
			steps = append(steps, Step{After: after, Op: OpCondition, Node: node, Condition: "Ready", Status: s.Status})
		}
	}
	if g.spreads.IntN(flapOdds) == 0 {
		steps = append(steps,
			Step{After: []time.Duration{2 * time.Second, 5 * time.Second}[g.spreads.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: "True"},
			Step{After: []time.Duration{time.Second, 3 * time.Second}[g.spreads.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: s.Status})
	}
	return steps
}

// pauseAtTheEdge draws, after a node turns unhealthy, a pause of a
// NodeHealthCheck that selects it, seconds before or after its condition
// expires (when a storm may start), lifted minutes later: longer than
// three of the shortest step timeout a spec draws.
func (g *generator) pauseAtTheEdge(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known || g.pauses.IntN(pauseOdds) != 0 {
		return nil
	}
	nhcs := g.selecting(pool)
	if len(nhcs) == 0 {
		return nil
	}
	nhc := nhcs[g.pauses.IntN(len(nhcs))]
	return []Step{
		{After: []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second}[g.pauses.IntN(3)], Op: OpPause, NHC: nhc, On: true},
		{After: []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}[g.pauses.IntN(3)], Op: OpPause, NHC: nhc, On: false},
	}
}

// lateStep draws, after a node turns unhealthy, the webhook of the
// remediator of a NodeHealthCheck's second step refusing the node's
// resources for minutes (the first step runs and times out meanwhile, and
// each refused create of the second takes the node lease again), then
// admitting them: the second step, created late, runs its whole timeout.
func (g *generator) lateStep(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known || g.lates.IntN(lateStepOdds) != 0 {
		return nil
	}
	var kinds []cluster.Kind
	for _, name := range g.selecting(pool) {
		if steps := g.specs[name].Steps; len(steps) > 1 && steps[1].Kind != steps[0].Kind {
			kinds = append(kinds, steps[1].Kind)
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	k := kinds[g.lates.IntN(len(kinds))]
	return []Step{
		{Op: OpDeny, Kind: k, Node: s.Node, On: true},
		{After: []time.Duration{2 * time.Minute, 3 * time.Minute, 5 * time.Minute}[g.lates.IntN(3)], Op: OpDeny, Kind: k, Node: s.Node, On: false},
	}
}

// confirmWhileHeld draws, after a node recovers, a remediator's finalizer
// on its resources, a manual confirmation, a relapse while the finalizer
// holds the confirmed recovery's resource, the finalizer's release, and
// a recovery of the next incident: a confirmation confirms one recovery.
func (g *generator) confirmWhileHeld(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status != "True" || !known || g.confirms.IntN(heldConfirmOdds) != 0 {
		return nil
	}
	kinds, _ := g.remediatorsOf(pool)
	if len(kinds) == 0 {
		return nil
	}
	steps := remediatorsDo(kinds, BehaveFinalize, 0)
	steps = append(steps,
		Step{After: []time.Duration{5 * time.Second, 15 * time.Second}[g.confirms.IntN(2)], Op: OpConfirm, Node: s.Node},
		Step{After: []time.Duration{3 * time.Second, 10 * time.Second}[g.confirms.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: "False"})
	steps = append(steps, remediatorsDo(kinds, BehaveRelease, []time.Duration{20 * time.Second, time.Minute}[g.confirms.IntN(2)])...)
	return append(steps, Step{After: []time.Duration{90 * time.Second, 3 * time.Minute}[g.confirms.IntN(2)], Op: OpCondition, Node: s.Node, Condition: "Ready", Status: "True"})
}

// othersOf is the other nodes drawn into a pool so far, by name.
func (g *generator) othersOf(pool, node string) []string {
	var others []string
	for _, n := range slices.Sorted(maps.Keys(g.pools)) {
		if n != node && g.pools[n] == pool {
			others = append(others, n)
		}
	}
	return others
}

// selecting is the NodeHealthChecks drawn so far that select a pool.
func (g *generator) selecting(pool string) []string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(g.specs)) {
		if slices.Contains(g.specs[name].Pools, pool) {
			names = append(names, name)
		}
	}
	return names
}
