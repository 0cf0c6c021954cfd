package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// act carries out a plan, in this order: time-outs, creates (each with its
// lease and its confirmation, both before it is sent), deletes, leases, then
// annotations; and says what happened, action by action. Each action stands
// alone: one failure does not stop the others, except that a node whose
// time-out annotation failed gets no next step, so that the order holds.
func (c *Controller) act(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, plan *health.Plan, watched *remediation.Watched) health.Outcome {
	var out health.Outcome
	failedTimeOut := map[string]bool{}
	for _, to := range plan.TimeOut {
		if to.Annotate {
			at := to.At.UTC().Format(time.RFC3339)
			if err := c.writer.Annotate(ctx, watched, to.Resource, v1alpha1.TimedOutAnnotation, &at); err != nil {
				failedTimeOut[to.Node] = true
				out.Errors = append(out.Errors, fmt.Errorf("marking %s %s/%s timed out: %w", to.Resource.Kind, to.Resource.Namespace, to.Resource.Name, err))
				continue
			}
		}
		out.TimedOut = append(out.TimedOut, to)
	}
	var creations []health.Creation
	for _, cr := range plan.Create {
		if !failedTimeOut[cr.Node] {
			creations = append(creations, cr)
		}
	}
	if len(creations) > 0 {
		c.createAll(ctx, nhc, creations, watched, c.confirmation(ctx, nhc.Name, plan, creations[0].Node), &out)
	}
	c.deleteAll(ctx, nhc.Name, plan.Delete, watched, &out)
	out.Errors = append(out.Errors, c.keepLeases(ctx, nhc.Name, plan)...)
	c.annotate(ctx, plan, watched, &out)
	return out
}

// annotate sets and clears the healthy delay's start, flags old
// remediations, and removes manual confirmations.
func (c *Controller) annotate(ctx context.Context, plan *health.Plan, watched *remediation.Watched, out *health.Outcome) {
	for _, mark := range plan.StartHealthyDelay {
		start := mark.Start.UTC().Format(time.RFC3339)
		if err := c.writer.Annotate(ctx, watched, mark.Resource, v1alpha1.HealthyDelayAnnotation, &start); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("starting the healthy delay of %s/%s: %w", mark.Resource.Namespace, mark.Resource.Name, err))
		}
	}
	for _, ref := range plan.ClearHealthyDelay {
		if err := c.writer.Annotate(ctx, watched, ref, v1alpha1.HealthyDelayAnnotation, nil); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("restarting the healthy delay of %s/%s: %w", ref.Namespace, ref.Name, err))
		}
	}
	flag := v1alpha1.OldRemediationAnnotationValue
	for _, ref := range plan.FlagOld {
		if err := c.writer.Annotate(ctx, watched, ref, v1alpha1.OldRemediationAnnotation, &flag); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("flagging %s/%s as old: %w", ref.Namespace, ref.Name, err))
			continue
		}
		out.Flagged = append(out.Flagged, ref)
	}
	for _, node := range plan.RemoveConfirmation {
		if err := c.writer.RemoveNodeAnnotation(ctx, node, v1alpha1.ManuallyConfirmedHealthyAnnotation); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("removing the manual confirmation of node %s: %w", node, err))
		}
	}
}

// writeWorkers bounds the deletes and lease writes sent at once, which no
// plan bounds: a storm's recovery goes out together instead of one round
// trip after another, and the client's rate limit still bounds it.
const writeWorkers = 16

// inParallel calls write for pieces 0 to n-1, writeWorkers at a time, and
// returns their errors by piece.
func inParallel(ctx context.Context, n int, write func(i int) error) []error {
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, writeWorkers, n, func(i int) { errs[i] = write(i) })
	return errs
}

// createResult is what became of one create.
type createResult struct {
	created     *health.Created
	blocked     *health.Blocked
	withdrawn   bool
	unconfirmed bool
	err         error
}

// createAll carries out creations all at once, each after its node lease is
// taken and its checks pass, and records what happened in
// plan order. A plan holds at most maxCreationsPerSync of them, so that a
// storm's first resources do not wait for the last ones' round trips.
func (c *Controller) createAll(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, creations []health.Creation, watched *remediation.Watched, check creationCheck, out *health.Outcome) {
	defer c.yield.creating()()
	results := make([]createResult, len(creations))
	workqueue.ParallelizeUntil(ctx, len(creations), len(creations), func(i int) {
		results[i] = c.create(ctx, nhc, creations[i], watched, check)
	})
	for i, r := range results {
		switch {
		case r.unconfirmed:
			out.Unconfirmed = append(out.Unconfirmed, *r.blocked)
		case r.withdrawn:
			out.Withdrawn = append(out.Withdrawn, *r.blocked)
		case r.blocked != nil:
			out.Blocked = append(out.Blocked, *r.blocked)
		case r.err != nil:
			out.Errors = append(out.Errors, r.err)
		case r.created != nil:
			out.Created = append(out.Created, *r.created)
		default:
			// Not started: the sync's context ended first.
			out.Errors = append(out.Errors, fmt.Errorf("creating remediation of node %s: %w", creations[i].Node, ctx.Err()))
		}
	}
}

// create takes a creation's node lease and, meanwhile, confirms the
// creation at the API server; once both are done, it checks the caches of
// the moment and sends the create. Under load each read and write is a wait
// at the API server: one after the other, every create waited three round
// trips instead of two. A lease taken for a create withdrawn is released
// by the next sync.
func (c *Controller) create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, cr health.Creation, watched *remediation.Watched, check creationCheck) createResult {
	type verdict struct {
		why string
		err error
	}
	confirmed := make(chan verdict, 1)
	go func() {
		why, err := check.live(ctx, cr)
		confirmed <- verdict{why: why, err: err}
	}()
	if cr.Lease != nil && c.leases != nil {
		if err := c.leases.Acquire(ctx, *cr.Lease); err != nil {
			if why := c.leases.Problem(err); why != "" {
				return createResult{blocked: &health.Blocked{Node: cr.Node, Message: why}}
			}
			return createResult{err: fmt.Errorf("taking the lease of node %s: %w", cr.Node, err)}
		}
	}
	live := <-confirmed
	// The caches first: what they show now was the API server's a moment
	// ago too; only a need that the caches still show is "not confirmed".
	if why := check.caches(cr); why != "" {
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: why}, withdrawn: true}
	}
	switch {
	case live.err != nil:
		return createResult{err: fmt.Errorf("confirming that node %s needs its remediation: %w", cr.Node, live.err)}
	case live.why != "":
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: live.why}, withdrawn: true, unconfirmed: true}
	}
	created, err := c.writer.Create(ctx, nhc, cr, watched)
	switch {
	case remediation.Refused(err):
		return createResult{blocked: &health.Blocked{Node: cr.Node, Message: err.Error()}}
	case err != nil:
		return createResult{err: fmt.Errorf("creating remediation of node %s from %s %s: %w", cr.Node, cr.Template.Kind, cr.Template.Name, err)}
	}
	return createResult{created: &created}
}

// deleteAll carries out deletions in parallel, once no create is in flight
// (Yield), and records what happened in plan order.
func (c *Controller) deleteAll(ctx context.Context, nhc string, deletions []health.Deletion, watched *remediation.Watched, out *health.Outcome) {
	if len(deletions) > 0 {
		c.yield.wait(ctx)
	}
	errs := inParallel(ctx, len(deletions), func(i int) error { return c.writer.Delete(ctx, nhc, watched, deletions[i]) })
	for i, del := range deletions {
		if errs[i] != nil {
			out.Errors = append(out.Errors, fmt.Errorf("deleting %s %s/%s: %w", del.Resource.Kind, del.Resource.Namespace, del.Resource.Name, errs[i]))
			continue
		}
		out.Deleted = append(out.Deleted, del)
	}
}

// keepLeases renews and releases the leases a plan says to, in parallel.
func (c *Controller) keepLeases(ctx context.Context, nhc string, plan *health.Plan) []error {
	if c.leases == nil {
		return nil
	}
	var errs []error
	renewed := inParallel(ctx, len(plan.RenewLeases), func(i int) error { return c.leases.Renew(ctx, plan.RenewLeases[i]) })
	for i, err := range renewed {
		if err != nil {
			errs = append(errs, fmt.Errorf("renewing the lease of node %s: %w", plan.RenewLeases[i].Node, err))
		}
	}
	holder := health.LeaseHolder(nhc)
	released := inParallel(ctx, len(plan.ReleaseLeases), func(i int) error { return c.leases.Release(ctx, plan.ReleaseLeases[i], holder) })
	for i, err := range released {
		if err != nil {
			errs = append(errs, fmt.Errorf("releasing the lease of node %s: %w", plan.ReleaseLeases[i], err))
		}
	}
	return errs
}
