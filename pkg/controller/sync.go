package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// sync evaluates one NodeHealthCheck and acts on the decision. It returns how
// soon the decision can change without any object changing, also along with
// an error: a failed action must not delay another node's deadline.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	logger := klog.FromContext(ctx).WithValues("nodeHealthCheck", klog.KRef("", name))
	ctx = klog.NewContext(ctx, logger)
	started := c.clock.Now()

	nhc, err := c.nhcLister.Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("NodeHealthCheck is gone; forgetting it")
		c.nhcGone(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	nhc = c.latest(nhc)
	obs, err := c.remediations.Observe(nhc)
	if err != nil {
		return 0, fmt.Errorf("observing remediation resources: %w", err)
	}
	if !obs.Ready {
		if obs.Problem != nil {
			return c.reportProblem(ctx, nhc, *obs.Problem)
		}
		logger.V(4).Info("Waiting for informers to sync or for own writes to show")
		return notReadyRequeue, nil
	}
	nodes, problem := c.selectedNodes(nhc, &obs)
	if obs.Problem == nil {
		obs.Problem = problem
	}
	now := c.clock.Now()
	d := health.Evaluate(health.Input{
		NHC: nhc, Nodes: nodes, Remediations: obs.Remediations,
		BusyControlPlaneNodes: obs.BusyControlPlaneNodes, Problem: obs.Problem, Now: now,
	})
	out := c.remediations.Apply(ctx, nhc, &d, &obs)
	c.recordEvents(ctx, nhc, &d, &out)
	c.metrics.record(nhc, &d, &out, now)
	statusErr := c.writeStatus(ctx, nhc, d.Status)

	var requeueAfter time.Duration
	if !d.NextDeadline.IsZero() {
		requeueAfter = max(d.NextDeadline.Sub(c.clock.Now()), time.Millisecond)
	}
	logVerdicts(logger, &d)
	logger.V(2).Info("Synced", "phase", d.Status.Phase, "observed", d.Observed, "healthy", d.Healthy,
		"remediating", d.Remediating, "created", len(out.Created), "deleted", len(out.Deleted), "timedOut", len(out.TimedOut),
		"stormActive", d.Storm.Active, "requeueAfter", requeueAfter, "duration", c.clock.Since(started))
	return requeueAfter, errors.Join(append(out.Errors, statusErr)...)
}

// reportProblem disables a NodeHealthCheck that cannot even be evaluated,
// such as one whose remediation kinds it may not watch. The informers keep
// trying, and their first sync wakes it up.
func (c *Controller) reportProblem(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, problem health.Problem) (time.Duration, error) {
	status, events := health.Disabled(nhc, problem, c.clock.Now())
	for _, e := range events {
		c.event(nhc, e.Type, e.Reason, e.Message)
		klog.FromContext(ctx).Info(e.Message, "reason", e.Reason)
	}
	klog.FromContext(ctx).V(2).Info("Cannot evaluate", "reason", problem.Reason, "message", problem.Message)
	return problemRequeue, c.writeStatus(ctx, nhc, status)
}

// selectedNodes lists the nodes the selector matches. An invalid selector
// (stored before validation could catch it) disables the NodeHealthCheck;
// its nodes under remediation stay selected so that their resources are not
// taken for orphans.
func (c *Controller) selectedNodes(nhc *v1alpha1.NodeHealthCheck, obs *remediation.Observation) ([]*corev1.Node, *health.Problem) {
	selector, err := metav1.LabelSelectorAsSelector(&nhc.Spec.Selector)
	if err != nil {
		var nodes []*corev1.Node
		for name := range obs.Remediations {
			if node, err := c.nodeLister.Get(name); err == nil {
				nodes = append(nodes, node)
			}
		}
		return nodes, &health.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf("The selector is invalid: %v", err)}
	}
	nodes, err := c.nodeLister.List(selector)
	if err != nil {
		return nil, &health.Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: fmt.Sprintf("Listing the selected nodes failed: %v", err)}
	}
	return nodes, nil
}

// logVerdicts logs the verdict of every node that is not healthy, at level 4.
func logVerdicts(logger klog.Logger, d *health.Decision) {
	if !logger.V(4).Enabled() {
		return
	}
	for _, v := range d.Nodes {
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
