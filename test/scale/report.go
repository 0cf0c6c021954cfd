package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one run, as written to the JSON file.
type result struct {
	Commit  string    `json:"commit"`
	Started time.Time `json:"started"`
	Machine machine   `json:"machine"`
	Config  *config   `json:"config"`
	// NodeBytes is one node's size as JSON, as the API server serves it.
	NodeBytes           int      `json:"nodeBytes"`
	NodesCreatedSeconds float64  `json:"nodesCreatedSeconds"`
	Phases              []*phase `json:"phases"`
	// Error is why the run stopped early, if it did.
	Error string `json:"error,omitempty"`
}

// write saves the result as JSON and returns the file's path.
func (r *result) write(dir, name string) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".json")
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

// labelWidth fits the table's longest row label.
const labelWidth = 42

// printTable prints the phases side by side.
func (r *result) printTable(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\nnhc-controller scale benchmark: %d nodes (%.1f KB each as JSON), %d NodeHealthChecks, minHealthy %s, condition duration %v\n",
		c.Nodes, float64(r.NodeBytes)/1000, c.NHCs, c.MinHealthy, c.ConditionDuration)
	fmt.Fprintf(w, "commit %s; %d CPUs (%s); load average %s before, %s after; nodes created in %.1fs\n",
		r.Commit, r.Machine.CPUs, r.Machine.Model, r.Machine.LoadBefore, r.Machine.LoadAfter, r.NodesCreatedSeconds)
	kubelets := "in the quiet phase alone"
	if c.HeartbeatsThroughout {
		kubelets = "from the quiet phase to the end"
	}
	fmt.Fprintf(w, "%.1f heartbeats/s and %.1f node lease renewals/s %s; quiet: %v; trickle: %d nodes, one every %v, each recovering %v after its deadline once remediated; storm: %d nodes, recovered after %v\n\n",
		c.HeartbeatRate, c.LeaseRate, kubelets, c.Quiet, c.Trickle, c.TrickleInterval, c.TrickleRecovery, c.Storm, c.StormHold)

	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cell func(*phase) string) {
		// Labels padded to one width read left-aligned among right-aligned numbers.
		cells := []string{fmt.Sprintf("%-*s", labelWidth, label)}
		for _, p := range r.Phases {
			cells = append(cells, cell(p))
		}
		fmt.Fprintln(t, strings.Join(cells, "\t")+"\t")
	}
	row("", func(p *phase) string { return p.Name })
	row("wall time (s)", func(p *phase) string { return fmt.Sprintf("%.1f", p.Seconds) })
	row("controller start to all observed (s)", func(p *phase) string { return optional(p.StartupSeconds > 0, "%.2f", p.StartupSeconds) })
	row("node changes (heartbeats, Ready changes)", func(p *phase) string { return optional(p.Changes > 0, "%d", p.Changes) })
	row("controller CPU (s)", func(p *phase) string { return fmt.Sprintf("%.2f", p.CPUSeconds) })
	row("CPU per change (ms)", func(p *phase) string { return optional(p.Changes > 0, "%.3f", p.CPUMsPerChange) })
	row("CPU per change beyond the heartbeats (ms)", func(p *phase) string {
		return optional(p.CPUMsPerChangeBeyondHeartbeats != 0, "%.3f", p.CPUMsPerChangeBeyondHeartbeats)
	})
	row("API server / etcd CPU (s)", func(p *phase) string {
		return fmt.Sprintf("%.1f / %.1f", p.APIServerCPUSeconds, p.EtcdCPUSeconds)
	})
	row("busiest 1 s (cores): apiserver/etcd/ctrl", func(p *phase) string {
		return fmt.Sprintf("%.2f / %.2f / %.2f", p.Busiest.APIServer, p.Busiest.Etcd, p.Busiest.Controller)
	})
	perChange := func(p *phase, n float64) string { return optional(p.Changes > 0, "%.2f", n/float64(max(p.Changes, 1))) }
	row("syncs", func(p *phase) string { return fmt.Sprintf("%.0f", p.Controller.Syncs) })
	row("  per change", func(p *phase) string { return perChange(p, p.Controller.Syncs) })
	row("status writes per change", func(p *phase) string {
		return perChange(p, float64(p.Requests.ByVerbResource[statusWrites]))
	})
	row("garbage collections per change", func(p *phase) string { return perChange(p, p.Controller.GCCycles) })
	row("API requests", func(p *phase) string { return fmt.Sprintf("%d", p.Requests.Total) })
	row("requests per change", func(p *phase) string { return optional(p.Changes > 0, "%.3f", p.RequestsPerChange) })
	row("  without Leases", func(p *phase) string { return optional(p.Changes > 0, "%.3f", p.RequestsPerChangeBeyondLeases) })
	row("failed requests (code >= 400)", func(p *phase) string { return fmt.Sprintf("%d", p.Requests.Failed) })
	row("peak RSS (MiB)", func(p *phase) string { return fmt.Sprintf("%.0f", p.PeakRSSMiB) })
	row("RSS at end (MiB)", func(p *phase) string { return fmt.Sprintf("%.0f", p.RSSMiB) })
	row("of it, files mapped (MiB)", func(p *phase) string { return fmt.Sprintf("%.0f", p.FileRSSMiB) })
	row("deadline to resource p50/p99/max (ms)", func(p *phase) string { return p.Detection.String() })
	row("Ready to deletion p50/p99/max (ms)", func(p *phase) string { return p.Recovery.String() })
	row("remediations / missed / leftover", func(p *phase) string {
		return optional(p.Detection != nil || p.Remediations > 0, "%d / %d / %d", p.Remediations, p.Missed, p.Leftover)
	})
	row("late / duplicates / over budget", func(p *phase) string {
		return optional(p.Detection != nil || p.Remediations > 0, "%d / %d / %d", p.Late, p.Duplicates, p.BudgetViolations)
	})
	row("late after Ready p50/p99/max (ms)", func(p *phase) string { return p.LateBy.String() })
	breakdown := func(keys []string, cell func(p *phase, key string) string) {
		for _, k := range keys {
			row("  "+k, func(p *phase) string { return cell(p, k) })
		}
	}
	count := func(counts func(*phase) map[string]int) func(*phase, string) string {
		return func(p *phase, k string) string { return optional(counts(p)[k] > 0, "%d", counts(p)[k]) }
	}
	byVerb := func(p *phase) map[string]int { return p.Requests.ByVerbResource }
	serverTime := func(p *phase) map[string]*latency { return p.Requests.ServerTimeByVerbResource }
	failed := func(p *phase) map[string]int { return p.Requests.FailedByVerbResource }
	row("requests by verb and resource:", func(*phase) string { return "" })
	breakdown(phaseKeys(r.Phases, byVerb), count(byVerb))
	row("API server time by verb and resource,", func(*phase) string { return "" })
	row("p50/p99/max (ms):", func(*phase) string { return "" })
	breakdown(phaseKeys(r.Phases, serverTime), func(p *phase, k string) string { return serverTime(p)[k].String() })
	row("failed requests by verb, resource, code:", func(*phase) string { return "" })
	breakdown(phaseKeys(r.Phases, failed), count(failed))
	_ = t.Flush()
}

// statusWrites is the audit log's key of the NodeHealthChecks' status
// writes.
const statusWrites = "update nodehealthchecks/status"

// phaseKeys are the keys of a map of each phase, of all phases, sorted.
func phaseKeys[V any](phases []*phase, of func(*phase) map[string]V) []string {
	keys := map[string]bool{}
	for _, p := range phases {
		for k := range of(p) {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

func optional(show bool, format string, args ...any) string {
	if !show {
		return "-"
	}
	return fmt.Sprintf(format, args...)
}

func (l *latency) String() string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f", l.P50, l.P99, l.Max)
}
