package main

import (
	"math"
	"slices"
	"time"
)

// latency summarizes durations in milliseconds.
type latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// summarize takes the nearest-rank percentiles: with 100 samples, p99 is
// the second largest.
func summarize(ds []time.Duration) *latency {
	if len(ds) == 0 {
		return nil
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return float64(sorted[max(i, 0)].Microseconds()) / 1000
	}
	return &latency{Count: len(sorted), P50: rank(0.50), P99: rank(0.99), Max: rank(1)}
}
