package gen

import (
	"maps"
	"slices"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// denialOdds is one in how many nodes turning unhealthy have their first
// remediator's webhook refuse their resources: rare, and common enough
// that a refused node is now and then the one unhealthy longest while a
// NodeHealthCheck's status shows no remediation, when one create goes a
// sync.
const denialOdds = 25

// deny draws, after a node turns unhealthy, whether the webhook of the
// remediator of a first step that a NodeHealthCheck selecting it uses
// refuses its resources (a node it cannot fence), as a webhook built on
// controller-runtime does, with a 403; and whether it admits them again
// a while later.
func (g *generator) deny(s Step) []Step {
	pool, known := g.pools[s.Node]
	if s.Op != OpCondition || s.Status == "True" || !known || g.denials.IntN(denialOdds) != 0 {
		return nil
	}
	kinds := g.firstRemediatorsOf(pool)
	if len(kinds) == 0 {
		return nil
	}
	k := kinds[g.denials.IntN(len(kinds))]
	steps := []Step{{Op: OpDeny, Kind: k, Node: s.Node, On: true}}
	if g.denials.IntN(2) == 0 {
		after := []time.Duration{30 * time.Second, time.Minute, 3 * time.Minute}[g.denials.IntN(3)]
		steps = append(steps, Step{After: after, Op: OpDeny, Kind: k, Node: s.Node, On: false})
	}
	return steps
}

// firstRemediatorsOf is the kinds of the first steps of the
// NodeHealthChecks that select a pool.
func (g *generator) firstRemediatorsOf(pool string) []cluster.Kind {
	var kinds []cluster.Kind
	for _, name := range slices.Sorted(maps.Keys(g.specs)) {
		spec := g.specs[name]
		if slices.Contains(spec.Pools, pool) && len(spec.Steps) > 0 && !slices.Contains(kinds, spec.Steps[0].Kind) {
			kinds = append(kinds, spec.Steps[0].Kind)
		}
	}
	return kinds
}
