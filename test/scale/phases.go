package main

import (
	"context"
	"log"
	"sync"
	"time"
)

// startup starts the controller and waits until every NodeHealthCheck's
// status counts all its nodes.
func (b *bench) startup(ctx context.Context, p *phase) error {
	want := map[string]int{}
	for g := range b.cfg.NHCs {
		want[groupName(g)] = groupSize(b.cfg, g)
	}
	wait, err := watchObserved(ctx, b.nhcs, want)
	if err != nil {
		return err
	}
	started := time.Now()
	if err := b.startController(); err != nil {
		return err
	}
	observed, err := wait(b.cfg.WaitTimeout)
	if err != nil {
		return err
	}
	p.StartupSeconds = observed.Sub(started).Seconds()
	return nil
}

// quiet is heartbeats and lease renewals only, as kubelets report an
// unchanged status: those of the kubelets running throughout, or, with
// --heartbeats-throughout=false, of kubelets started for this phase alone.
func (b *bench) quiet(ctx context.Context, p *phase) error {
	k := b.kubelets
	if k == nil {
		k = b.startKubelets(ctx)
	}
	before := k.heartbeats.Load()
	if !sleepUntil(ctx, time.Now().Add(b.cfg.Quiet)) {
		return ctx.Err()
	}
	if k != b.kubelets {
		// The heartbeats in flight at the end finish: only sending stops.
		k.halt()
	}
	p.Changes = int(k.heartbeats.Load() - before)
	return nil
}

// trickle fails nodes one every interval, spread over the NodeHealthChecks,
// and recovers each TrickleRecovery after its deadline, once its
// remediation resource exists.
func (b *bench) trickle(ctx context.Context, p *phase) error {
	var mu sync.Mutex
	var failures, recoveries []written
	var errs []error
	var wg sync.WaitGroup
	started := time.Now()
	for k := range b.cfg.Trickle {
		if !sleepUntil(ctx, started.Add(time.Duration(k)*b.cfg.TrickleInterval)) {
			break
		}
		// Evenly spaced over the nodes, so over the NodeHealthChecks too.
		node := nodeName((2*k + 1) * b.cfg.Nodes / (2 * b.cfg.Trickle))
		wg.Go(func() {
			failed, err := setReady(ctx, b.kube, node, false)
			if err == nil {
				b.tracker.waitUntil(ctx, b.cfg.WaitTimeout, func() bool { return b.tracker.live(node) > 0 })
				sleepUntil(ctx, failed.transition.Add(b.cfg.ConditionDuration+b.cfg.TrickleRecovery))
				var recovered written
				if recovered, err = setReady(ctx, b.kube, node, true); err == nil {
					mu.Lock()
					defer mu.Unlock()
					failures, recoveries = append(failures, failed), append(recoveries, recovered)
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	b.waitForCleanup(ctx)
	b.outcomes(p, failures, recoveries)
	return nil
}

// storm fails part of the first NodeHealthCheck's nodes at once, and
// recovers them together after the hold time.
func (b *bench) storm(ctx context.Context, p *phase) error {
	nodes := make([]string, b.cfg.Storm)
	for i := range nodes {
		nodes[i] = nodeName(i)
	}
	started := time.Now()
	failures, err := b.setAll(ctx, nodes, false)
	if err != nil {
		return err
	}
	log.Printf("storm: %d nodes failed in %.1fs; recovering them %v after", len(nodes), time.Since(started).Seconds(), b.cfg.StormHold)
	if b.profiler != nil {
		// The creates: from just before the first deadline (the stored
		// transition times have one-second precision) for 3 s.
		creates := started.Truncate(time.Second).Add(b.cfg.ConditionDuration)
		defer b.profiler.apiServerCPU(ctx, "storm", creates.Add(-200*time.Millisecond), 3*time.Second)()
		defer b.profiler.heapAt(ctx, b.controller.MetricsAddress, "storm-peak", creates.Add(1500*time.Millisecond))()
	}
	if !sleepUntil(ctx, started.Add(b.cfg.StormHold)) {
		return ctx.Err()
	}
	recoveries, err := b.setAll(ctx, nodes, true)
	if err != nil {
		return err
	}
	b.waitForCleanup(ctx)
	b.outcomes(p, failures, recoveries)
	return nil
}

// setAll sets the nodes' Ready condition with parallel writers.
func (b *bench) setAll(ctx context.Context, nodes []string, ready bool) ([]written, error) {
	var mu sync.Mutex
	var all []written
	err := forEach(ctx, b.cfg.Writers, nodes, func(node string) error {
		w, err := setReady(ctx, b.kube, node, ready)
		mu.Lock()
		defer mu.Unlock()
		all = append(all, w)
		return err
	})
	return all, err
}

// waitForCleanup waits until the controller deleted every resource of the
// recovered nodes.
func (b *bench) waitForCleanup(ctx context.Context) {
	if !b.tracker.waitUntil(ctx, b.cfg.WaitTimeout, func() bool { return b.tracker.total() == 0 }) {
		log.Printf("warning: %d remediation resources left after %v", b.tracker.total(), b.cfg.WaitTimeout)
	}
}

// outcomes measures a phase from its writes and the resources' events:
// latencies, and resources that should not have been.
func (b *bench) outcomes(p *phase, failures, recoveries []written) {
	events, duplicates, violations := b.tracker.phase()
	p.Changes = len(failures) + len(recoveries)
	p.Duplicates, p.BudgetViolations, p.Leftover = duplicates, violations, b.tracker.total()
	failed, recovered := byNode(failures), byNode(recoveries)
	remediated, cleaned := map[string]bool{}, map[string]bool{}
	var detection, recovery, late []time.Duration
	for _, e := range events {
		f, r := failed[e.node], recovered[e.node]
		switch {
		case !e.deleted && r.version > 0 && e.version > r.version:
			// Revisions order writes of all kinds: this was created
			// after the node was Ready again.
			p.Late++
			p.Remediations++
			late = append(late, e.seen.Sub(r.sent))
		case !e.deleted:
			p.Remediations++
			if f.version > 0 && e.version > f.version && !remediated[e.node] {
				remediated[e.node] = true
				// The controller reads the stored transition time: the
				// deadline is exact, the failure was up to a second later.
				detection = append(detection, e.seen.Sub(f.transition.Add(b.cfg.ConditionDuration)))
			}
		case r.version > 0 && e.seen.After(r.sent) && !cleaned[e.node]:
			cleaned[e.node] = true
			recovery = append(recovery, e.seen.Sub(r.sent))
		}
	}
	p.Missed = len(failed) - len(remediated)
	p.Detection, p.Recovery, p.LateBy = summarize(detection), summarize(recovery), summarize(late)
}

func byNode(ws []written) map[string]written {
	m := make(map[string]written, len(ws))
	for _, w := range ws {
		m[w.node] = w
	}
	return m
}

// sleepUntil sleeps until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
