package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// createRetries remembers, by NodeHealthCheck, the nodes whose last create
// failed or was refused, and holds each back for a back-off
// (health.Input.CreateRetries) so that the others go first: under the
// remediation guard a sync creates one resource, for the node unhealthy
// longest, and one node whose create a webhook always refuses, or whose
// resource's name someone else's resource holds, would hold back all the
// others. It holds nodes that failed within the last 2*MaxCreateRetry
// alone, so it keeps nothing of nodes long gone.
type createRetries struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// nodes are the back-offs, by NodeHealthCheck and node.
	nodes map[string]map[string]createRetry
}

// createRetry is a node's back-off: the interval of its last retry, and
// when it may be created again.
type createRetry struct {
	interval time.Duration
	at       time.Time
}

func newCreateRetries(clock clock.PassiveClock) *createRetries {
	return &createRetries{clock: clock, nodes: map[string]map[string]createRetry{}}
}

// Failed records a create that failed or was refused: its node waits for
// the next interval of its back-off, the first a FirstCreateRetry.
func (r *createRetries) Failed(nhc, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	retries := r.nodes[nhc]
	if retries == nil {
		retries = map[string]createRetry{}
		r.nodes[nhc] = retries
	}
	previous, ok := retries[node]
	interval := health.FirstCreateRetry
	if ok && !r.lapsed(previous, now) {
		interval = min(2*previous.interval, health.MaxCreateRetry)
	}
	retries[node] = createRetry{interval: interval, at: now.Add(interval)}
}

// Created forgets a node's failures.
func (r *createRetries) Created(nhc, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if retries := r.nodes[nhc]; retries != nil {
		delete(retries, node)
		if len(retries) == 0 {
			delete(r.nodes, nhc)
		}
	}
}

// Pending returns when each node of a NodeHealthCheck whose last create
// failed may be created again, and forgets the back-offs that lapsed: a
// node that fails again long after starts afresh. Nil for none.
func (r *createRetries) Pending(nhc string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	retries := r.nodes[nhc]
	if retries == nil {
		return nil
	}
	now := r.clock.Now()
	pending := make(map[string]time.Time, len(retries))
	for node, retry := range retries {
		if r.lapsed(retry, now) {
			delete(retries, node)
			continue
		}
		pending[node] = retry.at
	}
	if len(retries) == 0 {
		delete(r.nodes, nhc)
	}
	return pending
}

// Next is the first retry to come of a node of a NodeHealthCheck, or
// zero: one due already is the plan's to make.
func (r *createRetries) Next(nhc string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	var next time.Time
	for _, retry := range r.nodes[nhc] {
		if retry.at.After(now) && (next.IsZero() || retry.at.Before(next)) {
			next = retry.at
		}
	}
	return next
}

// Forget forgets a deleted NodeHealthCheck's back-offs.
func (r *createRetries) Forget(nhc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, nhc)
}

// lapsed tells whether a back-off ended long enough ago that the node
// starts afresh: its node was not retried, or no longer failed.
func (r *createRetries) lapsed(retry createRetry, now time.Time) bool {
	return now.After(retry.at.Add(health.MaxCreateRetry))
}
