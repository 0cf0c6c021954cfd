package sim

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/sim/gen"
)

var (
	seeds     = flag.Int("sim.seeds", 300, "histories to play, from seed sim.first on (make test plays the default, make sim as many as SEEDS says)")
	first     = flag.Uint64("sim.first", 1, "the first seed")
	seed      = flag.Uint64("sim.seed", 0, "play only this seed, and print its trace")
	steps     = flag.Int("sim.steps", 40, "steps of a history after its initial world")
	keepGoing = flag.Bool("sim.keep-going", false, "go on after a broken invariant, and report the first seed of each")
	progress  = flag.Bool("sim.progress", false, "draw a progress bar on stderr")
	all       = flag.Bool("sim.all", false, "report every seed that breaks an invariant, unshrunk, and go on")
	focus     = flag.String("sim.focus", "", "weight the histories towards features meeting: control-plane (quorum and escalations)")
	withFound = flag.Bool("sim.found", true, "play the seeds that once broke an invariant too (make mutate plays generated seeds alone)")
	drawing   = flag.String("sim.drawing", string(gen.DrawnToday), "the generator's draws a replayed seed has: a found seed's (before-held-relabels) replays the history that broke an invariant then")
)

// replays is how often a shrunk history is played again to say how often
// it breaks its invariant.
const replays = 3

// TestHistories plays generated histories against the real controller and
// checks every invariant after every change. A broken invariant prints its
// seed, the command that replays it, and the history shrunk to the fewest
// steps that still break it.
func TestHistories(t *testing.T) {
	if *seed != 0 {
		replay(t, seeded{seed: *seed, drawing: gen.Drawing(*drawing)})
		return
	}
	if testing.Short() {
		t.Skip("-short: no histories")
	}
	var played, stepsPlayed, checks atomic.Int64
	var mu sync.Mutex
	broken := map[string]bool{}
	var stop atomic.Bool
	var next atomic.Int64
	list := playList(*first, *seeds, *withFound)
	done := make(chan struct{})
	if *progress {
		go drawProgress(done, &played, &stepsPlayed, &checks, len(list))
	}
	t.Run("histories", func(t *testing.T) {
		for w := range runtime.GOMAXPROCS(0) {
			t.Run(fmt.Sprint("worker-", w), func(t *testing.T) {
				t.Parallel()
				for {
					i := next.Add(1) - 1
					if i >= int64(len(list)) || stop.Load() {
						return
					}
					p := list[i]
					s := p.seed
					h := p.history()
					stats := &Stats{}
					v := playWith(t, h, nil, stats)
					played.Add(1)
					stepsPlayed.Add(int64(stats.Steps))
					checks.Add(int64(stats.Checks))
					if v == nil {
						continue
					}
					if *all {
						t.Errorf("seed %d: %v", s, v)
						continue
					}
					mu.Lock()
					seen := broken[v.Invariant]
					broken[v.Invariant] = true
					mu.Unlock()
					if seen {
						continue
					}
					shrunk, sv := Shrink(t, h, v)
					t.Errorf("seed %d: %v\nreplay: make sim SEED=%d%s\nshrunk to the fewest steps that still break %s (in %d of %d replays):\n%v\n%s",
						s, v, s, p.replayArgs(), v.Invariant, Reproduces(t, shrunk, v.Invariant, replays), replays, sv, shrunk)
					if !*keepGoing {
						stop.Store(true)
						return
					}
				}
			})
		}
	})
	close(done)
	t.Logf("%d histories, %d steps, %d invariant checks; broken: %v", played.Load(), stepsPlayed.Load(), checks.Load(), slices.Sorted(maps.Keys(broken)))
}

// found are seeds whose histories once broke an invariant, by the
// drawing of the day they were found: every run plays them again, as they
// were drawn then. A seed found with today's drawing goes under
// gen.DrawnToday.
var found = map[gen.Drawing][]uint64{
	gen.DrawnBeforeReselectedRelapses: {2519, 20882, 22384, 25532, 32765},
	gen.DrawnBeforeReplacements:       {20189, 26416, 30536},
	gen.DrawnBeforeLateSteps:          {1040, 1743, 10106, 17037},
	gen.DrawnBeforeSpreads:            {501, 41007, 82644},
	gen.DrawnBeforeDenials:            {6838, 47160, 53831, 54113},
	gen.DrawnBeforeHeldRelabels:       {309, 354, 676, 873, 880, 896, 998, 1009, 1032, 1052, 1129, 1315, 1530, 1573, 1588, 1661, 1711, 1749, 2397, 2544, 2588, 2845, 3557, 3683, 3982, 4234, 5062, 6273, 7025, 7346, 17340, 24316, 30186, 30335, 31303, 32535, 33830, 35924, 36125, 40172, 40859, 40946, 47015, 47932, 48370, 50035, 50511, 50562, 54422, 59396, 60187, 60333, 67552, 102762, 103126, 104171, 105633, 106464, 109151, 110036, 110999, 118367, 120232, 124923, 130505, 140719, 163004, 174264, 177999, 186040, 207841, 235312, 302886, 308638, 386075, 415587, 494795},
}

// seeded is one history to play: a seed, drawn with a drawing.
type seeded struct {
	seed    uint64
	drawing gen.Drawing
}

func (p seeded) history() gen.History {
	return gen.Generate(p.seed, *steps, gen.Focus(*focus), p.drawing)
}

// replayArgs are the make arguments besides SEED that replay it.
func (p seeded) replayArgs() string {
	args := focusArg()
	if p.drawing != gen.DrawnToday {
		args += " DRAWING=" + string(p.drawing)
	}
	return args
}

// playList is the seeds to play: count from first on, drawn today, then,
// withFound, those found, as they were drawn then, unless the range plays
// the same history.
func playList(first uint64, count int, withFound bool) []seeded {
	var list []seeded
	for s := first; s < first+uint64(count); s++ {
		list = append(list, seeded{seed: s, drawing: gen.DrawnToday})
	}
	if !withFound {
		return list
	}
	for _, d := range slices.Sorted(maps.Keys(found)) {
		for _, s := range found[d] {
			p := seeded{seed: s, drawing: d}
			inRange := s >= first && s < first+uint64(count)
			if !inRange || (d != gen.DrawnToday && len(p.history().Steps) != len(seeded{seed: s, drawing: gen.DrawnToday}.history().Steps)) {
				list = append(list, p)
			}
		}
	}
	return list
}

// replay plays one seed with its trace, then shrinks it if it breaks an
// invariant, and plays the shrunk history with its trace.
// focusArg is the make argument that replays a seed with its focus.
func focusArg() string {
	if *focus == "" {
		return ""
	}
	return " FOCUS=" + *focus
}

func replay(t *testing.T, p seeded) {
	s := p.seed
	h := p.history()
	v := playWith(t, h, t.Logf, nil)
	if v == nil {
		t.Logf("seed %d breaks no invariant:\n%s", s, h)
		return
	}
	t.Logf("seed %d: %v", s, v)
	shrunk, _ := Shrink(t, h, v)
	t.Logf("shrunk history, played with its trace:")
	if again := playWith(t, shrunk, t.Logf, nil); again != nil {
		v = again
	} else {
		t.Logf("the shrunk history broke no invariant when played with its trace, as it did while shrinking: the break depends on timing")
	}
	t.Errorf("%v\n%s", v, shrunk)
}

func drawProgress(done <-chan struct{}, played, stepsPlayed, checks *atomic.Int64, total int) {
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	draw := func() {
		n := played.Load()
		width := 40
		filled := int(int64(width) * n / int64(max(total, 1)))
		fmt.Fprintf(os.Stderr, "\r[%s%s] %d/%d histories, %d steps, %d checks, %s", strings.Repeat("=", filled), strings.Repeat(" ", width-filled),
			n, total, stepsPlayed.Load(), checks.Load(), time.Since(start).Round(time.Second))
	}
	for {
		select {
		case <-done:
			draw()
			fmt.Fprintln(os.Stderr)
			return
		case <-tick.C:
			draw()
		}
	}
}
