// Command scale measures nhc-controller on a real kube-apiserver with
// thousands of realistic nodes, in four phases: start-up, quiet (heartbeats
// only), trickle (nodes failing one by one) and storm (many nodes of one
// NodeHealthCheck failing at once). It reports numbers and asserts none:
// a table on stdout, and JSON and the controller's log under _output/scale.
// Run it with make scale; docs/performance.md says what each number means.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// machine describes where a run ran: its numbers mean little without it.
type machine struct {
	CPUs       int    `json:"cpus"`
	Model      string `json:"model"`
	LoadBefore string `json:"loadAverageBefore"`
	LoadAfter  string `json:"loadAverageAfter"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compare(os.Args[2:]))
	}
	cfg, err := parseConfig(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	res := &result{Config: cfg, Started: time.Now(), Commit: commit(), Machine: machine{CPUs: runtime.NumCPU(), Model: cpuModel(), LoadBefore: loadAverage()}}
	if cfg.ControllerBinary != "" {
		res.Commit = filepath.Base(cfg.ControllerBinary)
	}
	name := fmt.Sprintf("scale-%dn-%dnhc-%s", cfg.Nodes, cfg.NHCs, res.Started.Format("20060102-150405"))
	err = run(ctx, cfg, res, name)
	res.Machine.LoadAfter = loadAverage()
	if err != nil {
		res.Error = err.Error()
	}
	res.printTable(os.Stdout)
	path, writeErr := res.write(cfg.Output, name)
	if writeErr != nil {
		log.Printf("writing the results: %v", writeErr)
	} else {
		fmt.Printf("\nresults: %s\n", path)
	}
	if err != nil || writeErr != nil {
		log.Printf("run failed: %v", errors.Join(err, writeErr))
		os.Exit(1)
	}
	if cfg.Trend != "" {
		if err := appendTrend(cfg.Trend, res); err != nil {
			log.Printf("appending to the trend: %v", err)
			os.Exit(1)
		}
		fmt.Printf("trend: %s (make scale-compare)\n", cfg.Trend)
	}
}

// compare prints the trend's last run of each size against the median of
// the runs before it; its exit code is 1 when a figure got worse beyond its
// noise.
func compare(args []string) int {
	path := defaultTrend()
	if len(args) > 0 {
		path = args[0]
	}
	entries, err := readTrend(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if marks := compareTrend(os.Stdout, entries); marks > 0 {
		fmt.Printf("\n%d figures got worse beyond their noise\n", marks)
		return 1
	}
	return 0
}

// run sets the cluster up, runs the phases in order, and tears it all down.
// The controller's log, and its profiles, go next to the results.
func run(ctx context.Context, cfg *config, res *result, name string) error {
	b, err := startBench(ctx, cfg, res)
	if b != nil {
		defer b.stop(filepath.Join(cfg.Output, name+"-controller.log"))
	}
	if err != nil {
		return err
	}
	if cfg.Profile {
		b.profiler = &profiler{dir: cfg.Output, run: name, apiServer: b.kube.CoreV1().RESTClient()}
	}
	// A phase's length, where it is known in advance, is that of its CPU
	// profile.
	phases := []struct {
		name   string
		run    func(context.Context, *phase) error
		length time.Duration
	}{
		{"startup", b.startup, 0},
		{"quiet", b.quiet, cfg.Quiet},
		{"trickle", b.trickle, time.Duration(cfg.Trickle)*cfg.TrickleInterval + cfg.ConditionDuration + cfg.TrickleRecovery},
		{"storm", b.storm, cfg.StormHold},
	}
	for _, ph := range phases {
		if ph.name == "quiet" && cfg.HeartbeatsThroughout {
			b.kubelets = b.startKubelets(ctx)
		}
		p, err := b.measure(ctx, ph.name, ph.run, ph.length)
		res.Phases = append(res.Phases, p)
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph.name, err)
		}
		if quiet := res.phase("quiet"); b.kubelets != nil && quiet != nil && p != quiet && p.Changes > 0 && quiet.Seconds > 0 {
			beyond := p.CPUSeconds - quiet.CPUSeconds/quiet.Seconds*p.Seconds
			p.CPUMsPerChangeBeyondHeartbeats = beyond * 1000 / float64(p.Changes)
		}
	}
	return nil
}

// commit names the source the controller was built from, "-dirty" when
// it has changes; the trend file, which each run appends to, is none.
func commit() string {
	root := controlplane.RepoRoot()
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--abbrev=12").Output()
	if err != nil {
		return "unknown"
	}
	name := strings.TrimSpace(string(out))
	trend, _ := filepath.Rel(root, defaultTrend())
	if exec.Command("git", "-C", root, "diff", "--quiet", "HEAD", "--", ".", ":(exclude)"+trend).Run() != nil {
		name += "-dirty"
	}
	return name
}

func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return runtime.GOARCH
}

// loadAverage is the 1, 5 and 15 minute load: other work on the machine
// shows in every number.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
