package main

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run appended to the trend reads back, and the next run of its size is
// compared with it: a figure worse beyond its noise is marked, one within
// it or better is not, and another size's first run compares with nothing.
func TestTheTrendMarksWhatGotWorse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trend.jsonl")
	run := func(commit string, nodes int, cpuMs, rss, stormP99 float64) *result {
		return &result{Commit: commit, Started: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), Machine: machine{CPUs: 2, LoadBefore: "0.10"},
			Config: &config{Nodes: nodes, NHCs: 10, HeartbeatRate: 83},
			Phases: []*phase{
				{Name: "startup", StartupSeconds: 3, PeakRSSMiB: rss / 2},
				{Name: "quiet", CPUMsPerChange: cpuMs, PeakRSSMiB: rss},
				{Name: "storm", Detection: &latency{Count: 300, P99: stormP99}, RequestsPerChange: 4},
			}}
	}
	require.NoError(t, appendTrend(path, run("aaaaaaa", 10000, 0.29, 90, 2750)))
	require.NoError(t, appendTrend(path, run("bbbbbbb", 1000, 0.37, 42, 900)))
	// CPU ×1.10 and storm p99 ×1.5 are within their noise; RSS ×1.3 is not.
	require.NoError(t, appendTrend(path, run("ccccccc", 10000, 0.32, 117, 4125)))
	entries, err := readTrend(path)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	assert.Equal(t, 90.0, entries[0].Figures["peak_rss_mib"], "the peak over the phases")
	assert.NotContains(t, entries[0].Figures, "trickle_p99_ms", "a phase that did not run")

	var out bytes.Buffer
	assert.Equal(t, 1, compareTrend(&out, entries))
	assert.Regexp(t, `10000 nodes, 10 NodeHealthChecks, 83 heartbeats/s: ccccccc .* against the median of aaaaaaa`, out.String())
	assert.Regexp(t, `peak_rss_mib +90 +117 +1\.30 +±12% +WORSE`, out.String())
	assert.Regexp(t, `quiet_cpu_ms_per_heartbeat +0\.29 +0\.32 +1\.10 +±15% +\n`, out.String())
	assert.Contains(t, out.String(), "1000 nodes, 10 NodeHealthChecks, 83 heartbeats/s: bbbbbbb (2026-11-23T00:00Z, load 0.10): its first run")
}

// The last run is compared with the median of the runs before it: one
// run far off (the same commit's storm p99 was 591 ms, then 1,306 ms, on
// one host) marks nothing by itself.
func TestTheTrendComparesWithTheMedianOfTheRunsBefore(t *testing.T) {
	entry := func(commit string, stormP99 float64) trendEntry {
		return trendEntry{Commit: commit, Nodes: 10000, NHCs: 10, HeartbeatRate: 83, Figures: map[string]float64{"storm_p99_ms": stormP99}}
	}
	var out bytes.Buffer
	entries := []trendEntry{entry("old", 5000), entry("a", 1110), entry("b", 1130), entry("c", 591), entry("now", 1306)}
	assert.Equal(t, 0, compareTrend(&out, entries), "1,306 against the median 1,110 of a, b and c; against c alone it would be ×2.2")
	assert.Regexp(t, `against the median of a .*, b .*, c `, out.String())
	assert.Regexp(t, `storm_p99_ms +1\.11e\+03 +1\.31e\+03 +1\.18 `, out.String())

	out.Reset()
	entries = append(entries, entry("worse", 2500))
	assert.Equal(t, 1, compareTrend(&out, entries), "2,500 against the median 1,130 of b, c and now")
}

// A storm met by the kubelets' heartbeats is compared with storms that met
// them too, never with those on an idle API server.
func TestTheTrendComparesRunsWithHeartbeatsThroughoutApart(t *testing.T) {
	entry := func(commit string, throughout bool, stormP99 float64) trendEntry {
		e := trendEntry{Commit: commit, Nodes: 10000, NHCs: 10, HeartbeatRate: 50, Figures: map[string]float64{"storm_p99_ms": stormP99}}
		if throughout {
			e.HeartbeatsThroughout, e.LeaseRate = true, 100
		}
		return e
	}
	var out bytes.Buffer
	entries := []trendEntry{entry("idle", false, 1000), entry("busy", true, 3000)}
	assert.Equal(t, 0, compareTrend(&out, entries), "3,000 ms under load is not 3 times worse than 1,000 ms idle")
	assert.Contains(t, out.String(), "10000 nodes, 10 NodeHealthChecks, 50 heartbeats/s: idle")
	assert.Contains(t, out.String(), "10000 nodes, 10 NodeHealthChecks, 50 heartbeats and 100 lease renewals/s throughout: busy")
}

// A trickle whose nodes recover after their deadline keeps incidents
// overlapping and costs more per change than one whose nodes recover once
// remediated: the two are compared apart.
func TestTheTrendComparesTricklesOfOverlappingIncidentsApart(t *testing.T) {
	entry := func(commit string, recovery, cpu float64) trendEntry {
		return trendEntry{Commit: commit, Nodes: 10000, NHCs: 10, HeartbeatRate: 50, TrickleRecoveryS: recovery,
			Figures: map[string]float64{"trickle_cpu_ms_per_change": cpu}}
	}
	var out bytes.Buffer
	entries := []trendEntry{entry("at-once", 0, 13), entry("overlapping", 20, 30)}
	assert.Equal(t, 0, compareTrend(&out, entries), "30 ms with overlapping incidents is not worse than 13 ms without")
	assert.Contains(t, out.String(), "10000 nodes, 10 NodeHealthChecks, 50 heartbeats/s: at-once")
	assert.Contains(t, out.String(), "10000 nodes, 10 NodeHealthChecks, 50 heartbeats/s, trickle nodes recovering 20s after their deadline: overlapping")
}
