package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// messageUnreadable says what to do about a stored NodeHealthCheck that
// cannot be decoded.
const messageUnreadable = "The stored NodeHealthCheck cannot be read, probably because it was stored under an older, looser CRD: %s. Fix the field with kubectl edit, or delete and recreate the NodeHealthCheck"

// logCannotWatchEveryKind is logged at level 2 while watchEveryKind fails.
const logCannotWatchEveryKind = "Cannot watch the remediation kinds of every NodeHealthCheck yet; no control-plane remediation starts and no lease of a deleted NodeHealthCheck is released"

// Sync runs one NodeHealthCheck once, one way: decide (health.Evaluate),
// act (carry out the plan), record (the status built from what happened,
// events, metrics). It returns how soon the plan can change without any
// object changing, also along with an error: a failed action must not delay
// another node's deadline. The workers call it; tests may call it directly.
func (c *Controller) Sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("nodeHealthCheck", klog.KRef("", name))
	ctx = klog.NewContext(ctx, logger)
	started := c.clock.Now()

	stored, nhc, err := c.nhcs.Get(ctx, name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("NodeHealthCheck is gone; forgetting it")
		c.forget(name)
		return c.releaseLeasesLeft(ctx, name)
	}
	if err != nil {
		return 0, err
	}
	if why, bad := unreadable(nhc); bad {
		return 0, c.reportUnreadable(ctx, nhc, why)
	}

	// Decide.
	src, err := c.watch(ctx, nhc)
	if err != nil {
		return 0, err
	}
	g, err := gather.Gather(ctx, nhc, src, c.clock.Now())
	if err != nil {
		return 0, err
	}
	in := g.Input
	in.StatusBytes = c.statusBytes
	in.CreateRetries = c.retries.Pending(name)
	// The remediation guard reads the stored status, not the one left to
	// this sync.
	in.MaxCreations, in.CreatesHeld = health.GuardedCreations(&stored.Status, in.Remediations, g.OwnWritePending, maxCreationsPerSync)
	if g.Behind {
		logger.V(4).Info("Waiting for the node cache to show the nodes the API server selects")
		return catchUpRequeue, nil
	}
	plan := c.evaluate(name, in, src)
	if in.ResourcesUnknown && plan.Problem == nil {
		logger.V(4).Info("Waiting for informers to sync")
		return notReadyRequeue, nil
	}

	// Act.
	out, err := c.act(ctx, nhc, &plan, src)
	if err != nil {
		return 0, err
	}

	// Record.
	status := health.Status(in, &plan, &out)
	if in.ResourcesUnknown {
		_, statusErr := c.nhcs.RecordStatus(ctx, stored, status, false)
		c.events.Record(ctx, nhc, &plan, &out)
		c.metrics.setDisabled(name, true)
		logger.V(2).Info("Cannot evaluate", "reason", plan.Problem.Reason, "message", plan.Problem.Message)
		return health.Sooner(problemRequeue, g.RefreshAfter), statusErr
	}
	requeueAfter := requeueDelay(&plan, &out, g.RefreshAfter, in.CreatesHeld, c.retries.Next(name), c.clock.Now())
	leave := leavesStatus(stored, &status, &out, requeueAfter)
	if leave {
		// The watch events of the writes usually wake the next sync first.
		requeueAfter = health.Sooner(requeueAfter, statusLeftWithin)
	}
	written, statusErr := c.nhcs.RecordStatus(ctx, stored, status, leave)
	c.events.Record(ctx, nhc, &plan, &out)
	c.events.RecordLasting(ctx, nhc, &plan, &out)
	c.metrics.record(stored, &plan, &out, status, written, in.Now)

	logVerdicts(logger, &plan)
	logger.V(2).Info("Synced", "phase", status.Phase, "observed", plan.Observed, "healthy", plan.Healthy,
		"remediating", plan.Remediating, "created", len(out.Created), "deleted", len(out.Deleted), "timedOut", len(out.TimedOut),
		"deferred", plan.Deferred, "withdrawn", len(out.Withdrawn), "notConfirmed", len(out.Unconfirmed),
		"stormActive", plan.StormAfter(&out).Active, "statusWritten", written, "requeueAfter", requeueAfter, "duration", c.clock.Since(started))
	return requeueAfter, errors.Join(append(out.Errors, statusErr)...)
}

// evaluate decides, and tells the node cache from when a create may be
// due. Under Config.CheckQuiet it checks the decision against the one
// made with the quiet nodes it left out.
func (c *Controller) evaluate(name string, in health.Input, src *cacheSource) health.Plan {
	plan := health.Evaluate(in)
	c.pacing.ReadAtOnceFrom(name, plan.CreatesFrom)
	if c.checkQuiet != nil {
		if err := health.CompareLeftOut(in, src.quiet); err != nil {
			c.checkQuiet(name, err)
		}
	}
	return plan
}

// act carries out a plan while this replica may write, and then tells the
// node cache when a create may next be due: once its creates went out, the
// cache batches node updates again until then.
func (c *Controller) act(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, plan *health.Plan, src *cacheSource) (health.Outcome, error) {
	actCtx, cancel, err := c.api.writesUntil.context(ctx)
	if err != nil {
		return health.Outcome{}, err
	}
	defer cancel()
	out := c.actor.CarryOut(actCtx, nhc, plan, src.watched)
	c.pacing.ReadAtOnceFrom(nhc.Name, plan.CreatesFromAfter(&out))
	return out, nil
}

// watchEveryKind watches the kinds of every NodeHealthCheck and those that
// may hold resources of deleted ones, once after a start: until then no
// control-plane remediation starts (remediation.Observer.WatchAll), and no
// lease of a deleted NodeHealthCheck is released (WatchLeft).
func (c *Controller) watchEveryKind(ctx context.Context) {
	if err := c.observer.WatchAll(ctx, c.nhcs.Readable); err != nil {
		klog.FromContext(ctx).V(2).Info(logCannotWatchEveryKind, "err", err)
	}
}

// requeueDelay is how soon after now the plan can change without any
// object changing: at once for the rest of the work, else the next
// deadline, a retry of what was refused or failed (retryAt, the first of
// createRetries), held or not confirmed, or a read's refresh
// (refreshAfter).
// Held creates wait for a status write that failed, or for this
// controller's writes to show; the events of both usually come first.
// After failed actions the rest of the work waits for the rate limiter's
// back-off: at once, it would meet a failing API server every millisecond.
// After refused creates it goes on at once, their nodes waiting for their
// retry (createRetries): a node the plan held behind one (the batch, one
// control-plane node at a time) gets its turn; after failed ones, with the
// back-off.
func requeueDelay(plan *health.Plan, out *health.Outcome, refreshAfter time.Duration, held bool, retryAt, now time.Time) time.Duration {
	var requeueAfter time.Duration
	restAtOnce := plan.Deferred > 0 && !held && len(out.Errors) == 0
	switch {
	case restAtOnce || len(out.Withdrawn) > 0 || len(out.Blocked) > 0:
		// The rest of the work, from a fresh snapshot.
		requeueAfter = time.Millisecond
	case !plan.NextDeadline.IsZero():
		requeueAfter = max(plan.NextDeadline.Sub(now), time.Millisecond)
	}
	if !retryAt.IsZero() {
		requeueAfter = health.Sooner(requeueAfter, max(retryAt.Sub(now), time.Millisecond))
	}
	if held || len(out.Unconfirmed) > 0 {
		// The write awaited, once the cache shows it, wakes the sync first.
		requeueAfter = health.Sooner(requeueAfter, notReadyRequeue)
	}
	return health.Sooner(requeueAfter, refreshAfter)
}

// reportUnreadable disables a NodeHealthCheck that the API server stored but
// that cannot be decoded, on that object alone: nothing else is known of it,
// so nothing is done for its nodes, and the others go on.
func (c *Controller) reportUnreadable(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, why string) error {
	in := health.Input{NHC: nhc, ResourcesUnknown: true, Now: c.clock.Now(), Unreadable: &health.Problem{
		Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf(messageUnreadable, why),
	}}
	plan := health.Evaluate(in)
	status := health.Status(in, &plan, &health.Outcome{})
	if err := c.nhcs.PatchUnreadable(ctx, nhc, status); err != nil {
		return err
	}
	c.events.Record(ctx, nhc, &plan, &health.Outcome{})
	c.metrics.setDisabled(nhc.Name, true)
	klog.FromContext(ctx).V(2).Info("Cannot read the stored NodeHealthCheck", "error", why)
	return nil
}

// logVerdicts logs the verdict of every node that is not healthy, at level 4.
func logVerdicts(logger klog.Logger, p *health.Plan) {
	if !logger.V(4).Enabled() {
		return
	}
	for _, v := range p.Nodes {
		if v.State == health.StateHealthy {
			continue
		}
		keysAndValues := []any{"node", klog.KObj(v.Node), "state", v.State, "remediations", v.Remediations, "controlPlane", v.ControlPlane, "excluded", v.Excluded}
		if v.Condition != nil {
			keysAndValues = append(keysAndValues, "conditionType", v.Condition.Type, "conditionStatus", v.Condition.Status, "since", v.Since, "expires", v.Expires)
		}
		if v.Waiting != health.WaitNone {
			keysAndValues = append(keysAndValues, "waiting", v.Waiting)
		}
		logger.V(4).Info("Node verdict", keysAndValues...)
	}
}
