package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// trendEntry is one run's headline figures: a line of the trend file,
// which make scale appends to and make scale-compare reads.
type trendEntry struct {
	Commit        string  `json:"commit"`
	Date          string  `json:"date"`
	CPUs          int     `json:"cpus"`
	Nodes         int     `json:"nodes"`
	NHCs          int     `json:"nhcs"`
	HeartbeatRate float64 `json:"heartbeatRate"`
	// HeartbeatsThroughout: the trickle and the storm ran with the
	// heartbeats and lease renewals going, at LeaseRate renewals a second.
	// Runs with and without are compared apart.
	HeartbeatsThroughout bool    `json:"heartbeatsThroughout,omitempty"`
	LeaseRate            float64 `json:"leaseRate,omitempty"`
	// TrickleRecoveryS is how many seconds after its deadline a trickle
	// node recovered (0: as soon as its resource existed). Runs of
	// different trickles are compared apart.
	TrickleRecoveryS float64 `json:"trickleRecoveryS,omitempty"`
	// Load is the load average before the run: a busy host explains a
	// figure that moved.
	Load    string             `json:"load"`
	Figures map[string]float64 `json:"figures"`
}

// trendFigure is a figure the trend follows, and how much it moved
// between two runs of one commit on one host: a change beyond that is
// marked (docs/performance.md, "The trend").
type trendFigure struct {
	name  string
	noise float64
	of    func(r *result) (float64, bool)
}

var trendFigures = []trendFigure{
	{"startup_s", 0.7, inPhase("startup", func(p *phase) float64 { return p.StartupSeconds })},
	{"quiet_cpu_ms_per_heartbeat", 0.15, inPhase("quiet", func(p *phase) float64 { return p.CPUMsPerChange })},
	{"peak_rss_mib", 0.12, func(r *result) (float64, bool) { return r.peakRSS(), len(r.Phases) > 0 }},
	{"trickle_p99_ms", 0.6, detectionP99("trickle")},
	{"storm_p99_ms", 0.6, detectionP99("storm")},
	{"trickle_requests_per_change", 0.1, inPhase("trickle", func(p *phase) float64 { return p.RequestsPerChange })},
	{"storm_requests_per_change", 0.1, inPhase("storm", func(p *phase) float64 { return p.RequestsPerChange })},
	{"trickle_cpu_ms_per_change", 0.3, inPhase("trickle", func(p *phase) float64 { return p.CPUMsPerChangeBeyondHeartbeats })},
	{"trickle_syncs_per_change", 0.1, inPhase("trickle", func(p *phase) float64 { return p.Controller.Syncs / float64(max(p.Changes, 1)) })},
	{"trickle_status_writes_per_change", 0.1, inPhase("trickle", func(p *phase) float64 {
		return float64(p.Requests.ByVerbResource[statusWrites]) / float64(max(p.Changes, 1))
	})},
}

// inPhase reads a figure of the run's phase of that name, if it ran.
func inPhase(name string, figure func(*phase) float64) func(*result) (float64, bool) {
	return func(r *result) (float64, bool) {
		if p := r.phase(name); p != nil {
			return figure(p), true
		}
		return 0, false
	}
}

// phase is the run's phase of that name, or nil if it did not run.
func (r *result) phase(name string) *phase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func detectionP99(name string) func(*result) (float64, bool) {
	return func(r *result) (float64, bool) {
		if p := r.phase(name); p != nil && p.Detection != nil {
			return p.Detection.P99, true
		}
		return 0, false
	}
}

func (r *result) peakRSS() float64 {
	peak := 0.0
	for _, p := range r.Phases {
		peak = max(peak, p.PeakRSSMiB)
	}
	return peak
}

// appendTrend adds a completed run's figures to the trend file.
func appendTrend(path string, r *result) error {
	e := trendEntry{Commit: r.Commit, Date: r.Started.UTC().Format("2006-01-02T15:04Z"), CPUs: r.Machine.CPUs,
		Nodes: r.Config.Nodes, NHCs: r.Config.NHCs, HeartbeatRate: r.Config.HeartbeatRate,
		HeartbeatsThroughout: r.Config.HeartbeatsThroughout, LeaseRate: r.Config.LeaseRate, TrickleRecoveryS: r.Config.TrickleRecovery.Seconds(),
		Load:    r.Machine.LoadBefore,
		Figures: map[string]float64{}}
	for _, f := range trendFigures {
		if v, ok := f.of(r); ok {
			e.Figures[f.name] = v
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = file.Write(append(line, '\n'))
	return errors.Join(err, file.Close())
}

func readTrend(path string) ([]trendEntry, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var entries []trendEntry
	lines := bufio.NewScanner(file)
	for n := 1; lines.Scan(); n++ {
		if strings.TrimSpace(lines.Text()) == "" {
			continue
		}
		var e trendEntry
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		entries = append(entries, e)
	}
	return entries, lines.Err()
}

// baselineRuns is how many runs before the last one its figures are
// compared with, by their median: two runs of one commit on one host have
// given a storm p99 of 591 ms and 1,306 ms.
const baselineRuns = 3

// compareTrend prints, for each size the trend holds, the last run against
// the median of the runs before it (up to baselineRuns): each figure's
// ratio, marked where it got worse by more than its noise. It returns the
// number of marks.
func compareTrend(w io.Writer, entries []trendEntry) int {
	type size struct {
		nodes, nhcs     int
		rate, leaseRate float64
		throughout      bool
		recovery        float64
	}
	var order []size
	bySize := map[size][]trendEntry{}
	for _, e := range entries {
		s := size{e.Nodes, e.NHCs, e.HeartbeatRate, e.LeaseRate, e.HeartbeatsThroughout, e.TrickleRecoveryS}
		if bySize[s] == nil {
			order = append(order, s)
		}
		bySize[s] = append(bySize[s], e)
	}
	marks := 0
	for _, s := range order {
		runs := bySize[s]
		last := runs[len(runs)-1]
		kubelets := fmt.Sprintf("%g heartbeats/s", s.rate)
		if s.throughout {
			kubelets = fmt.Sprintf("%g heartbeats and %g lease renewals/s throughout", s.rate, s.leaseRate)
		}
		if s.recovery > 0 {
			kubelets += fmt.Sprintf(", trickle nodes recovering %gs after their deadline", s.recovery)
		}
		fmt.Fprintf(w, "\n%d nodes, %d NodeHealthChecks, %s: %s (%s, load %s)", s.nodes, s.nhcs, kubelets, last.Commit, last.Date, last.Load)
		if len(runs) < 2 {
			fmt.Fprintln(w, ": its first run, nothing to compare")
			continue
		}
		before := runs[max(0, len(runs)-1-baselineRuns) : len(runs)-1]
		var commits []string
		for _, r := range before {
			commits = append(commits, r.Commit+" ("+r.Date+", load "+r.Load+")")
		}
		fmt.Fprintf(w, " against the median of %s\n", strings.Join(commits, ", "))
		t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(t, "figure\tbefore\tnow\tratio\tnoise\t")
		for _, f := range trendFigures {
			was, okWas := medianOf(before, f.name)
			now, okNow := last.Figures[f.name]
			if !okWas || !okNow {
				continue
			}
			ratio, mark := "-", ""
			if was > 0 {
				ratio = fmt.Sprintf("%.2f", now/was)
				// Every figure is better lower.
				if now/was > 1+f.noise {
					mark = "WORSE"
					marks++
				}
			}
			fmt.Fprintf(t, "%s\t%.3g\t%.3g\t%s\t±%.0f%%\t%s\n", f.name, was, now, ratio, f.noise*100, mark)
		}
		_ = t.Flush()
	}
	return marks
}

// medianOf returns the median of a figure over the runs that have it (the
// mean of the middle two for an even count).
func medianOf(runs []trendEntry, name string) (float64, bool) {
	var values []float64
	for _, r := range runs {
		if v, ok := r.Figures[name]; ok {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return 0, false
	}
	slices.Sort(values)
	mid := len(values) / 2
	if len(values)%2 == 0 {
		return (values[mid-1] + values[mid]) / 2, true
	}
	return values[mid], true
}
