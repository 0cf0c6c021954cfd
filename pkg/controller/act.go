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

// actor carries out a plan, in this order: time-outs, creates (each with
// its lease and its confirmation, both before it is sent), deletes, leases,
// then annotations; and says what happened, action by action. Each action
// stands alone: one failure does not stop the others, except that a node
// whose time-out annotation failed gets no next step, so that the order
// holds.
type actor struct {
	api *apiServer
	// yield holds back deletes while creates are in flight; nil: none.
	yield *Yield
	// creates sends a plan's creates all at once (creates.go).
	creates *createFanOut
	// rechecks confirms each create just before it is sent (confirm.go).
	rechecks *rechecker
}

// CarryOut carries out a plan.
func (a *actor) CarryOut(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, plan *health.Plan, watched *remediation.Watched) health.Outcome {
	var out health.Outcome
	failedTimeOut := map[string]bool{}
	for _, to := range plan.TimeOut {
		if to.Annotate {
			at := to.At.UTC().Format(time.RFC3339)
			if err := a.api.writer.Annotate(ctx, watched, to.Resource, v1alpha1.TimedOutAnnotation, &at); err != nil {
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
		a.creates.Send(ctx, nhc, creations, watched, a.rechecks.StartReads(ctx, nhc.Name, plan, creations[0].Node), &out)
	}
	a.deleteAll(ctx, nhc.Name, plan.Delete, watched, &out)
	out.Errors = append(out.Errors, a.keepLeases(ctx, nhc.Name, plan)...)
	a.annotate(ctx, plan, watched, &out)
	return out
}

// annotate sets and clears the healthy delay's start, flags old
// remediations, and removes manual confirmations.
func (a *actor) annotate(ctx context.Context, plan *health.Plan, watched *remediation.Watched, out *health.Outcome) {
	for _, mark := range plan.StartHealthyDelay {
		start := mark.Start.UTC().Format(time.RFC3339)
		if err := a.api.writer.Annotate(ctx, watched, mark.Resource, v1alpha1.HealthyDelayAnnotation, &start); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("starting the healthy delay of %s/%s: %w", mark.Resource.Namespace, mark.Resource.Name, err))
		}
	}
	for _, ref := range plan.ClearHealthyDelay {
		if err := a.api.writer.Annotate(ctx, watched, ref, v1alpha1.HealthyDelayAnnotation, nil); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("restarting the healthy delay of %s/%s: %w", ref.Namespace, ref.Name, err))
		}
	}
	flag := v1alpha1.OldRemediationAnnotationValue
	for _, ref := range plan.FlagOld {
		if err := a.api.writer.Annotate(ctx, watched, ref, v1alpha1.OldRemediationAnnotation, &flag); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("flagging %s/%s as old: %w", ref.Namespace, ref.Name, err))
			continue
		}
		out.Flagged = append(out.Flagged, ref)
	}
	for _, node := range plan.RemoveConfirmation {
		if deletesFailed(node, plan.Delete, out.Deleted) {
			// The confirmation stays for the deletes' retry.
			continue
		}
		if err := a.api.writer.RemoveNodeAnnotation(ctx, node, v1alpha1.ManuallyConfirmedHealthyAnnotation); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("removing the manual confirmation of node %s: %w", node, err))
		}
	}
}

// deletesFailed says whether a node's planned deletes did not all go through.
func deletesFailed(node string, planned, deleted []health.Deletion) bool {
	want, done := 0, 0
	for _, d := range planned {
		if d.Node == node {
			want++
		}
	}
	for _, d := range deleted {
		if d.Node == node {
			done++
		}
	}
	return done < want
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

// deleteAll carries out deletions in parallel, once no create is in flight
// (Yield), and records what happened in plan order.
func (a *actor) deleteAll(ctx context.Context, nhc string, deletions []health.Deletion, watched *remediation.Watched, out *health.Outcome) {
	if len(deletions) > 0 {
		a.yield.wait(ctx)
	}
	gone := make([]bool, len(deletions))
	errs := inParallel(ctx, len(deletions), func(i int) (err error) {
		gone[i], err = a.api.writer.Delete(ctx, nhc, watched, deletions[i])
		return err
	})
	for i, del := range deletions {
		if errs[i] != nil {
			out.Errors = append(out.Errors, fmt.Errorf("deleting %s %s/%s: %w", del.Resource.Kind, del.Resource.Namespace, del.Resource.Name, errs[i]))
			continue
		}
		out.Deleted = append(out.Deleted, del)
		if gone[i] {
			out.DeletedGone++
		}
	}
}

// keepLeases renews and releases the leases a plan says to, in parallel.
func (a *actor) keepLeases(ctx context.Context, nhc string, plan *health.Plan) []error {
	if a.api.leases == nil {
		return nil
	}
	var errs []error
	renewed := inParallel(ctx, len(plan.RenewLeases), func(i int) error { return a.api.leases.Renew(ctx, plan.RenewLeases[i]) })
	for i, err := range renewed {
		if err != nil {
			errs = append(errs, fmt.Errorf("renewing the lease of node %s: %w", plan.RenewLeases[i].Node, err))
		}
	}
	holder := health.LeaseHolder(nhc)
	released := inParallel(ctx, len(plan.ReleaseLeases), func(i int) error { return a.api.leases.Release(ctx, plan.ReleaseLeases[i], holder) })
	for i, err := range released {
		if err != nil {
			errs = append(errs, fmt.Errorf("releasing the lease of node %s: %w", plan.ReleaseLeases[i], err))
		}
	}
	return errs
}
