// Command mutate breaks the spec's rules on purpose, one at a time, and
// checks that the simulation catches each: it builds test/sim with one
// mutated file (go's -overlay, so the tree is never touched), plays
// generated histories from seed 1 with no saved seed and no focus, and
// prints a table of what it found. A mutation that survives is an
// invariant missing; the command then exits 1.
//
//	go run ./hack/mutate [-seeds 2000] [-only name,name]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// result is what the simulation found of one mutation.
type result struct {
	mutation
	caught bool
	// seed is the first seed that broke an invariant, invariant the one
	// it broke, steps the length of the history shrunk, replays how many
	// of 3 replays of it broke it again.
	seed, invariant, steps, replays string
	took                            time.Duration
}

var (
	brokenLine = regexp.MustCompile(`seed (\d+): invariant (\S+) broken`)
	shrunkLine = regexp.MustCompile(`\(in (\d) of \d replays\):`)
	stepsLine  = regexp.MustCompile(`seed \d+, (\d+) steps:`)
)

func main() {
	seeds := flag.Int("seeds", 2000, "generated histories each mutation may take to be caught")
	only := flag.String("only", "", "comma-separated names of the mutations to run; all when empty")
	flag.Parse()
	if err := run(*seeds, *only); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(seeds int, only string) error {
	work, err := os.MkdirTemp("", "mutate")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Every mutation is checked before any is played, so a stale one fails
	// the run in a second, not after the others' minutes.
	for _, m := range mutations {
		if _, err := m.apply(); err != nil {
			return fmt.Errorf("mutation %s: %w", m.Name, err)
		}
	}
	var results []result
	for _, m := range mutations {
		if only != "" && !slices.Contains(strings.Split(only, ","), m.Name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "mutation %s: %s\n", m.Name, m.Rule)
		r, err := try(work, m, seeds)
		if err != nil {
			return fmt.Errorf("mutation %s: %w", m.Name, err)
		}
		fmt.Fprintf(os.Stderr, "  caught=%v seed=%s invariant=%s steps=%s (%s)\n", r.caught, r.seed, r.invariant, r.steps, r.took.Round(time.Second))
		results = append(results, r)
	}
	fmt.Print(table(results, seeds))
	for _, r := range results {
		if !r.caught {
			return errors.New("a mutation survived: an invariant is missing")
		}
	}
	return nil
}

// try builds the simulation with m applied and plays seeds histories, up
// to the first broken invariant.
func try(work string, m mutation, seeds int) (result, error) {
	r := result{mutation: m}
	source, err := m.apply()
	if err != nil {
		return r, err
	}
	mutated := filepath.Join(work, m.Name+".go")
	if err := os.WriteFile(mutated, source, 0o644); err != nil {
		return r, err
	}
	file, err := filepath.Abs(m.File)
	if err != nil {
		return r, err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {file: mutated}})
	if err != nil {
		return r, err
	}
	overlayFile := filepath.Join(work, m.Name+".json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return r, err
	}
	binary := filepath.Join(work, m.Name+".test")
	build := exec.Command("go", "test", "-c", "-overlay", overlayFile, "-o", binary, "./test/sim")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return r, fmt.Errorf("building the simulation: %w", err)
	}
	start := time.Now()
	play := exec.Command(binary, "-test.run", "TestHistories", "-test.timeout", "0",
		"-sim.seeds", fmt.Sprint(seeds), "-sim.first", "1", "-sim.found=false")
	play.Dir = "test/sim"
	out, err := play.CombinedOutput()
	r.took = time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return r, err
	}
	if match := brokenLine.FindSubmatch(out); match != nil {
		r.caught, r.seed, r.invariant = true, string(match[1]), string(match[2])
		if m := shrunkLine.FindSubmatch(out); m != nil {
			r.replays = string(m[1])
		}
		if all := stepsLine.FindAllSubmatch(out, -1); len(all) > 0 {
			r.steps = string(all[len(all)-1][1])
		}
	} else if err != nil {
		return r, fmt.Errorf("the simulation failed without a broken invariant:\n%s", out)
	}
	return r, nil
}

// apply is m.File's source with m's edits made, or an error when an edit's
// Old does not occur exactly once: the code moved on and the mutation with
// it must.
func (m mutation) apply() ([]byte, error) {
	source, err := os.ReadFile(m.File)
	if err != nil {
		return nil, err
	}
	for _, e := range m.Edits {
		if n := bytes.Count(source, []byte(e.Old)); n != 1 {
			return nil, fmt.Errorf("%s holds %q %d times, not once: the mutation is stale", m.File, e.Old, n)
		}
		source = bytes.Replace(source, []byte(e.Old), []byte(e.New), 1)
	}
	return source, nil
}

// table is the results as the Markdown table docs/mutations.md holds.
func table(results []result, seeds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| mutation | rule broken | caught within %d histories | first seed | invariant | shrunk to | replays |\n|---|---|---|---|---|---|---|\n", seeds)
	for _, r := range results {
		caught := "**no**"
		if r.caught {
			caught = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Name, r.Rule, caught, dash(r.seed), dash(r.invariant), steps(r.steps), replays(r.replays))
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func steps(s string) string {
	if s == "" {
		return "–"
	}
	return s + " steps"
}

func replays(s string) string {
	if s == "" {
		return "–"
	}
	return s + " of 3"
}
