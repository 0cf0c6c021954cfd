package controller

import (
	"context"
	"fmt"

	"k8s.io/client-go/util/workqueue"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// createsInFlight bounds a sync's creates in flight. Each holds three
// goroutines, their stacks deep in client-go's calls, and its requests'
// buffers: 300 at once made a storm's peak (900 goroutines, 6 MiB of
// stacks alone), while the API server of a small control plane serves no
// more than a few dozen writes at once anyway.
const createsInFlight = 64

// createFanOut sends a sync's creates together, up to createsInFlight at
// a time, each in three goroutines: one takes its node lease and then
// sends it, one meanwhile confirms it at the API server (recheck), where a
// third reads its node beside the NodeHealthCheck. Under load each read
// and write is a wait at the API server: one after the other, every create
// waited three round trips instead of two, and a storm's first resources
// waited for the last ones'. A plan holds at most maxCreationsPerSync
// creates. A lease taken for a create withdrawn is released by the next
// sync.
type createFanOut struct {
	api *apiServer
	// yield is told of the creates in flight, so that deletes and events
	// wait for them; nil: none.
	yield *Yield
	// retries holds back the nodes whose create failed or was refused.
	retries *createRetries
}

// createResult is what became of one create.
type createResult struct {
	created     *health.Created
	blocked     *health.Blocked
	withdrawn   bool
	unconfirmed bool
	err         error
}

// Send carries out creations, each after its node lease is taken and its
// rechecks pass, and records what happened in plan order.
func (f *createFanOut) Send(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, creations []health.Creation, watched *remediation.Watched, check recheck, out *health.Outcome) {
	defer f.yield.creating()()
	results := make([]createResult, len(creations))
	workqueue.ParallelizeUntil(ctx, min(len(creations), createsInFlight), len(creations), func(i int) {
		results[i] = f.create(ctx, nhc, creations[i], watched, check)
	})
	for i, r := range results {
		node := creations[i].Node
		switch {
		case r.unconfirmed:
			out.Unconfirmed = append(out.Unconfirmed, *r.blocked)
		case r.withdrawn:
			out.Withdrawn = append(out.Withdrawn, *r.blocked)
		case r.blocked != nil:
			f.retries.Failed(nhc.Name, node)
			out.Blocked = append(out.Blocked, *r.blocked)
		case r.err != nil:
			f.retries.Failed(nhc.Name, node)
			out.Errors = append(out.Errors, r.err)
		case r.created != nil:
			f.retries.Created(nhc.Name, node)
			out.Created = append(out.Created, *r.created)
		default:
			// Not started: the sync's context ended first.
			out.Errors = append(out.Errors, fmt.Errorf("creating remediation of node %s: %w", node, ctx.Err()))
		}
	}
}

// create takes a creation's node lease and, meanwhile, confirms the
// creation at the API server; once both are done, it checks the caches of
// the moment and sends the create.
func (f *createFanOut) create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, cr health.Creation, watched *remediation.Watched, check recheck) createResult {
	type verdict struct {
		why string
		err error
	}
	confirmed := make(chan verdict, 1)
	go func() {
		why, err := check.atAPIServer(ctx, cr)
		confirmed <- verdict{why: why, err: err}
	}()
	if cr.Lease != nil && f.api.leases != nil {
		if err := f.api.leases.Acquire(ctx, *cr.Lease); err != nil {
			if why := f.api.leases.Problem(err); why != "" {
				return createResult{blocked: &health.Blocked{Node: cr.Node, Message: why}}
			}
			return createResult{err: fmt.Errorf("taking the lease of node %s: %w", cr.Node, err)}
		}
	}
	live := <-confirmed
	// The caches first: what they show now was the API server's a moment
	// ago too; only a need that the caches still show is "not confirmed".
	if why := check.inCaches(cr); why != "" {
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: why}, withdrawn: true}
	}
	switch {
	case live.err != nil:
		return createResult{err: fmt.Errorf("confirming that node %s needs its remediation: %w", cr.Node, live.err)}
	case live.why != "":
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: live.why}, withdrawn: true, unconfirmed: true}
	}
	created, err := f.api.writer.Create(ctx, nhc, cr, watched)
	switch {
	case remediation.Refused(err):
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: err.Error()}}
	case err != nil:
		return createResult{err: fmt.Errorf("creating remediation of node %s from %s %s: %w", cr.Node, cr.Template.Kind, cr.Template.Name, err)}
	}
	return createResult{created: &created}
}
