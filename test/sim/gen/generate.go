package gen

import (
	"math/rand/v2"
	"slices"
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The world a history starts from and the names its steps use: six nodes
// in three pools, three of them control-plane nodes, remediators of three
// kinds with their templates, and up to three NodeHealthChecks.
var (
	initialNodes = []struct {
		name, pool   string
		controlPlane bool
	}{{"cp-0", "cp", true}, {"cp-1", "cp", true}, {"cp-2", "cp", true}, {"worker-0", "a", false}, {"worker-1", "a", false}, {"worker-2", "b", false}}
	extraNodes = []string{"worker-3", "worker-4"}
	pools      = []string{"cp", "a", "b"}
	nhcNames   = []string{"nhc-1", "nhc-2", "nhc-3"}
	templates  = map[cluster.Kind][]string{"Alpha": {"alpha-1", "alpha-2"}, "Beta": {"beta-1"}, "Gamma": {"gamma-1"}}
)

// Focus weights the generator towards some features meeting.
type Focus string

const (
	// FocusNone draws every step with its usual weight.
	FocusNone Focus = ""
	// FocusControlPlane makes every NodeHealthCheck select the
	// control-plane pool with escalating steps, and most steps act on
	// control-plane nodes: where quorum and escalations meet.
	FocusControlPlane Focus = "control-plane"
)

// generator draws a history's steps.
type generator struct {
	rng *rand.Rand
	// budgets draws the budget and storm forms, on a stream of its own, so
	// that the rest of every seed's history stays as it was drawn before
	// they were.
	budgets *rand.Rand
	// relapses draws the relapses after a recovery, on a stream of its own
	// too.
	relapses *rand.Rand
	// bounds draws the status's bound, on a stream of its own too.
	bounds *rand.Rand
	// returns draws a relabelled node's return to its pool, on a stream
	// of its own too; pools are the nodes' pools as drawn so far.
	returns *rand.Rand
	pools   map[string]string
	// holds draws an operator's relabelling of an unhealthy node out and
	// back while its remediator holds its resource, on a stream of its
	// own too; specs are the NodeHealthChecks as drawn so far.
	holds *rand.Rand
	specs map[string]*NHCSpec
	// denials draws a remediator's webhook refusing an unhealthy node's
	// resources, on a stream of its own too.
	denials *rand.Rand
	// spreads, pauses, confirms and lates draw the shapes of spread.go,
	// each on a stream of its own too.
	spreads, pauses, confirms, lates *rand.Rand
	// replaces draws relabelWhileReplaced (relabel.go).
	replaces *rand.Rand
	focus    Focus
}

// Drawing names the draws a history has. A draw added later changes the
// histories of the seeds that meet it, so a seed saved when its history
// broke an invariant replays with the drawing of that day, and the
// generated range with today's.
type Drawing string

const (
	// DrawnBeforeHeldRelabels has every draw but an operator's
	// relabelling of a node its remediators hold (relabelWhileHeld), and
	// a webhook's refusals (deny).
	DrawnBeforeHeldRelabels Drawing = "before-held-relabels"
	// DrawnBeforeDenials has every draw but a webhook's refusals (deny,
	// lateStep) and the other shapes of spread.go.
	DrawnBeforeDenials Drawing = "before-denials"
	// DrawnBeforeLateSteps has every draw but a second step's remediator
	// refusing a node for minutes (lateStep).
	DrawnBeforeLateSteps Drawing = "before-late-steps"
	// DrawnBeforeSpreads has every draw but the shapes of spread.go:
	// failures seconds apart and flaps, pauses at a storm's edge, and
	// confirmations while a finalizer holds.
	DrawnBeforeSpreads Drawing = "before-spreads"
	// DrawnBeforeReplacements has every draw but a node relabelled while
	// its remediator expects to replace it (relabelWhileReplaced).
	DrawnBeforeReplacements Drawing = "before-replacements"
	// DrawnBeforeReselectedRelapses has every draw but the recovery and
	// relapse of a node selected again after relabelWhileReplaced.
	DrawnBeforeReselectedRelapses Drawing = "before-reselected-relapses"
	// DrawnToday has every draw.
	DrawnToday Drawing = "today"
)

// Generate returns the history of a seed, of about n steps after the
// initial world, drawn with a focus and a drawing.
func Generate(seed uint64, n int, focus Focus, drawing Drawing) History {
	g := &generator{rng: rand.New(rand.NewPCG(seed, 0x5eed)), budgets: rand.New(rand.NewPCG(seed, 0xb0d9e7)),
		relapses: rand.New(rand.NewPCG(seed, 0x4e1a95e)), bounds: rand.New(rand.NewPCG(seed, 0x57a7b5)),
		returns: rand.New(rand.NewPCG(seed, 0x2e7b2d)), pools: map[string]string{},
		holds: rand.New(rand.NewPCG(seed, 0x4e1d)), specs: map[string]*NHCSpec{}, denials: rand.New(rand.NewPCG(seed, 0xde41a1)),
		spreads: rand.New(rand.NewPCG(seed, 0x5b4ead)), pauses: rand.New(rand.NewPCG(seed, 0xba05e)), confirms: rand.New(rand.NewPCG(seed, 0xc0f14)), lates: rand.New(rand.NewPCG(seed, 0x1a7e)),
		replaces: rand.New(rand.NewPCG(seed, 0x4e91ace)),
		focus:    focus}
	if focus == FocusNone && g.budgets.IntN(4) == 0 {
		// One history in four is drawn as FOCUS=control-plane draws it:
		// where quorum and escalations meet is rare in the even mix.
		g.focus = FocusControlPlane
	}
	h := History{Seed: seed, StatusBytes: g.statusBytes()}
	for _, node := range initialNodes {
		h.Steps = append(h.Steps, Step{Op: OpAddNode, Node: node.name, Pool: node.pool, ControlPlane: node.controlPlane})
		g.pools[node.name] = node.pool
	}
	for _, k := range cluster.Kinds {
		for _, t := range templates[k] {
			h.Steps = append(h.Steps, Step{Op: OpTemplate, Kind: k, Template: t, On: true})
		}
	}
	for i := range 1 + g.rng.IntN(3) {
		s := Step{Op: OpCreateNHC, NHC: nhcNames[i], Spec: g.spec()}
		h.Steps = append(h.Steps, s)
		g.track(s)
	}
	for range n {
		s := g.step()
		h.Steps = append(h.Steps, s)
		if relapse, ok := g.relapse(s); ok {
			h.Steps = append(h.Steps, relapse)
		}
		if back, ok := g.relabelBack(s); ok {
			h.Steps = append(h.Steps, back)
		}
		g.track(s)
		if drawing != DrawnBeforeHeldRelabels {
			h.Steps = append(h.Steps, g.relabelWhileHeld(s)...)
		}
		if drawing == DrawnToday || drawing == DrawnBeforeSpreads {
			h.Steps = append(h.Steps, g.deny(s)...)
		}
		if drawing == DrawnToday || drawing == DrawnBeforeLateSteps || drawing == DrawnBeforeReplacements || drawing == DrawnBeforeReselectedRelapses {
			h.Steps = append(h.Steps, g.spread(s)...)
			h.Steps = append(h.Steps, g.pauseAtTheEdge(s)...)
			h.Steps = append(h.Steps, g.confirmWhileHeld(s)...)
		}
		if drawing == DrawnToday || drawing == DrawnBeforeReplacements || drawing == DrawnBeforeReselectedRelapses {
			h.Steps = append(h.Steps, g.lateStep(s)...)
		}
		if drawing == DrawnToday || drawing == DrawnBeforeReselectedRelapses {
			h.Steps = append(h.Steps, g.relabelWhileReplaced(s, drawing == DrawnToday)...)
		}
	}
	return h
}

// statusBytes draws, for one history in three, a bound on the status's
// entries small enough for a handful of nodes to meet it: 400 to 1,500
// bytes, where a node's entry with one step takes about 330 in full and
// 280 compacted, each step more about 250. The entries of nodes under
// remediation are then listed compactly, and a new incident waits
// (StatusFull) while the status cannot remember it beside those under way
// within twice the bound (docs/decisions.md, "The status is bounded"),
// counted at a compact record of each of its spec's steps: about 750
// bytes for three, so every bound drawn holds one at least. The others
// keep the controller's default.
func (g *generator) statusBytes() int {
	if g.bounds.IntN(3) != 0 {
		return 0
	}
	return []int{400, 500, 600, 800, 1000, 1500}[g.bounds.IntN(6)]
}

func (g *generator) pick(items []string) string { return items[g.rng.IntN(len(items))] }

func (g *generator) node() string {
	if g.focus == FocusControlPlane && g.rng.IntN(4) != 0 {
		return g.pick([]string{"cp-0", "cp-1", "cp-2"})
	}
	if g.rng.IntN(8) == 0 {
		return g.pick(extraNodes)
	}
	return initialNodes[g.rng.IntN(len(initialNodes))].name
}

func (g *generator) kind() cluster.Kind { return cluster.Kinds[g.rng.IntN(len(cluster.Kinds))] }

func (g *generator) duration(options ...time.Duration) time.Duration {
	return options[g.rng.IntN(len(options))]
}

// spec draws a NodeHealthCheck's spec: selectors that may overlap,
// conditions of short durations, escalations, budgets, healthy delays.
func (g *generator) spec() *NHCSpec {
	s := &NHCSpec{}
	for _, p := range pools {
		if g.rng.IntN(2) == 0 {
			s.Pools = append(s.Pools, p)
		}
	}
	if len(s.Pools) == 0 {
		s.Pools = []string{g.pick(pools)}
	}
	if g.focus == FocusControlPlane && !slices.Contains(s.Pools, "cp") {
		s.Pools = append(s.Pools, "cp")
	}
	s.Conditions = append(s.Conditions, ConditionSpec{Type: "Ready", Status: "False", Duration: g.duration(10*time.Second, 30*time.Second, time.Minute)})
	if g.rng.IntN(2) == 0 {
		s.Conditions = append(s.Conditions, ConditionSpec{Type: "Ready", Status: "Unknown", Duration: g.duration(20*time.Second, time.Minute)})
	}
	if g.rng.IntN(4) == 0 {
		s.MaxUnhealthy = g.pick([]string{"1", "2", "50%"})
	}
	g.budget(s)
	if g.rng.IntN(3) == 0 && g.focus != FocusControlPlane {
		k := g.kind()
		s.Steps = []TemplateStep{{Kind: k, Template: g.pick(templates[k])}}
	} else {
		for range 1 + g.rng.IntN(3) {
			k := g.kind()
			t := g.pick(templates[k])
			if !containsStep(s.Steps, k, t) {
				s.Steps = append(s.Steps, TemplateStep{Kind: k, Template: t, Timeout: g.duration(30*time.Second, time.Minute, 3*time.Minute)})
			}
		}
	}
	switch g.rng.IntN(5) {
	case 0:
		d := g.duration(30*time.Second, 2*time.Minute)
		s.HealthyDelay = &d
	case 1:
		d := -time.Second
		s.HealthyDelay = &d
	}
	s.Paused = g.rng.IntN(10) == 0
	return s
}

// budget draws, beside maxUnhealthy, every other budget form at its edges
// (a count or a percentage, minHealthy or maxUnhealthy, from none allowed
// to all) and storm recovery (a threshold, a cooldown, both), which needs
// a budget.
func (g *generator) budget(s *NHCSpec) {
	if s.MaxUnhealthy == "" && g.budgets.IntN(3) == 0 {
		if g.budgets.IntN(2) == 0 {
			s.MinHealthy = g.pickFrom(g.budgets, []string{"1", "2", "3", "4", "34%", "50%", "67%", "100%"})
		} else {
			s.MaxUnhealthy = g.pickFrom(g.budgets, []string{"0", "1", "3", "34%", "67%", "100%"})
		}
	}
	if (s.MaxUnhealthy == "" && s.MinHealthy == "") || g.budgets.IntN(2) == 0 {
		return
	}
	switch g.budgets.IntN(3) {
	case 0:
		s.StormThreshold = ptr.To(int32(g.budgets.IntN(3)))
	case 1:
		s.StormCooldown = []time.Duration{30 * time.Second, 2 * time.Minute}[g.budgets.IntN(2)]
	default:
		s.StormThreshold = ptr.To(int32(g.budgets.IntN(3)))
		s.StormCooldown = []time.Duration{30 * time.Second, 2 * time.Minute}[g.budgets.IntN(2)]
	}
}

func (g *generator) pickFrom(rng *rand.Rand, items []string) string {
	return items[rng.IntN(len(items))]
}

func containsStep(steps []TemplateStep, k cluster.Kind, t string) bool {
	for _, s := range steps {
		if s.Kind == k && s.Template == t {
			return true
		}
	}
	return false
}

// relapse draws, after a node's recovery, whether it relapses soon: while
// the resources deleted on its recovery may still be held, or its
// healthyDelay still runs, where an incident's end is easiest to get wrong.
func (g *generator) relapse(s Step) (Step, bool) {
	if s.Op != OpCondition || s.Status != "True" || g.relapses.IntN(3) != 0 {
		return Step{}, false
	}
	after := []time.Duration{2 * time.Second, 10 * time.Second, 20 * time.Second, 45 * time.Second}[g.relapses.IntN(4)]
	status := []string{"False", "Unknown"}[g.relapses.IntN(2)]
	return Step{After: after, Op: OpCondition, Node: s.Node, Condition: "Ready", Status: status}, true
}

// step draws one step, weighted towards what happens most: nodes failing
// and recovering, remediators acting, time passing.
func (g *generator) step() Step {
	s := Step{After: g.duration(0, time.Second, 5*time.Second, 15*time.Second, 30*time.Second, time.Minute, 2*time.Minute)}
	switch w := g.rng.IntN(100); {
	case w < 30:
		s.Op, s.Node, s.Condition = OpCondition, g.node(), "Ready"
		s.Status = g.pick([]string{"False", "False", "Unknown", "True", "True"})
		if g.rng.IntN(10) == 0 {
			s.Skew = g.duration(-30*time.Second, 20*time.Second)
		}
	case w < 40:
		s.Op, s.Kind = OpRemediator, g.kind()
		s.Behaviour = []Behaviour{BehaveSucceed, BehaveFail, BehaveDelete, BehaveDelete, BehaveFinalize, BehaveRelease}[g.rng.IntN(6)]
	case w < 44:
		s.Op, s.Node, s.On = OpExclude, g.node(), g.rng.IntN(2) == 0
	case w < 46:
		s.Op, s.Node = OpConfirm, g.node()
	case w < 49:
		s.Op, s.Node = OpAddNode, g.pick(extraNodes)
		s.Pool, s.ControlPlane = g.pick(pools), g.rng.IntN(3) == 0
	case w < 51:
		s.Op, s.Node = OpDeleteNode, g.node()
	case w < 53:
		s.Op, s.Node, s.Pool = OpRelabel, g.node(), g.pick(pools)
	case w < 55:
		s.Op, s.Node, s.ControlPlane = OpRole, g.node(), g.rng.IntN(2) == 0
	case w < 59:
		s.Op, s.NHC, s.Spec = OpCreateNHC, g.pick(nhcNames), g.spec()
	case w < 62:
		s.Op, s.NHC, s.Spec = OpEditNHC, g.pick(nhcNames), g.spec()
	case w < 66:
		s.Op, s.NHC, s.On = OpPause, g.pick(nhcNames), g.rng.IntN(2) == 0
	case w < 68:
		s.Op, s.NHC = OpDeleteNHC, g.pick(nhcNames)
	case w < 71:
		s.Op, s.Kind = OpTemplate, g.kind()
		s.Template, s.On = g.pick(templates[s.Kind]), g.rng.IntN(2) == 0
	case w < 73:
		s.Op, s.Kind, s.On = OpInstall, g.kind(), g.rng.IntN(3) != 0
	case w < 77:
		s.Op, s.Kind, s.On = OpForbid, g.kind(), g.rng.IntN(2) == 0
	case w < 81:
		s.Op, s.Node, s.On = OpNMO, g.node(), g.rng.IntN(2) == 0
	case w < 84:
		s.Op = OpCrash
	case w < 86:
		s.Op, s.Duration = OpPartition, g.duration(5*time.Second, 20*time.Second)
	case w < 90:
		s.Op, s.Duration = OpFaults, g.duration(5*time.Second, 30*time.Second)
		s.Fault = []apiserver.Fault{apiserver.FaultUnavailable, apiserver.FaultThrottled, apiserver.FaultInternal, apiserver.FaultLostAnswer}[g.rng.IntN(4)]
	case w < 93:
		s.Op, s.Duration = OpWatchDelay, g.duration(2*time.Second, 10*time.Second)
	case w < 95:
		s.Op, s.Resource = OpWatchStall, g.pick([]string{"nodes", "leases", "nodehealthchecks", "alpharemediations"})
	case w < 97:
		s.Op = OpWatchResume
	default:
		s.Op, s.On = OpWatchBreak, g.rng.IntN(2) == 0
	}
	return s
}
