package remediation

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Apply carries out a plan's actions on remediation resources and nodes, and
// says what happened, action by action. Each action stands alone: one failure
// does not stop the others, except that a node whose time-out annotation
// failed gets no next step, so that the order holds. Every create is
// confirmed just before it is sent; creates go out in parallel.
func (m *Manager) Apply(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, plan *health.Plan, obs *Observation) health.Outcome {
	var out health.Outcome
	failedTimeOut := map[string]bool{}
	for _, to := range plan.TimeOut {
		if to.Annotate {
			at := to.At.UTC().Format(time.RFC3339)
			if err := m.annotate(ctx, obs, to.Resource, v1alpha1.TimedOutAnnotation, &at); err != nil {
				failedTimeOut[to.Node] = true
				out.Errors = append(out.Errors, fmt.Errorf("marking %s %s/%s timed out: %w", to.Resource.Kind, to.Resource.Namespace, to.Resource.Name, err))
				continue
			}
		}
		out.TimedOut = append(out.TimedOut, to)
	}
	var creations []health.Creation
	for _, c := range plan.Create {
		if !failedTimeOut[c.Node] {
			creations = append(creations, c)
		}
	}
	if len(creations) > 0 {
		m.createAll(ctx, nhc, creations, obs, m.confirmation(ctx, nhc.Name, plan), &out)
	}
	m.deleteAll(ctx, nhc.Name, plan.Delete, obs, &out)
	out.Errors = append(out.Errors, m.keepLeases(ctx, nhc.Name, plan)...)
	for _, mark := range plan.StartHealthyDelay {
		start := mark.Start.UTC().Format(time.RFC3339)
		if err := m.annotate(ctx, obs, mark.Resource, v1alpha1.HealthyDelayAnnotation, &start); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("starting the healthy delay of %s/%s: %w", mark.Resource.Namespace, mark.Resource.Name, err))
		}
	}
	for _, ref := range plan.ClearHealthyDelay {
		if err := m.annotate(ctx, obs, ref, v1alpha1.HealthyDelayAnnotation, nil); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("restarting the healthy delay of %s/%s: %w", ref.Namespace, ref.Name, err))
		}
	}
	flag := v1alpha1.OldRemediationAnnotationValue
	for _, ref := range plan.FlagOld {
		if err := m.annotate(ctx, obs, ref, v1alpha1.OldRemediationAnnotation, &flag); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("flagging %s/%s as old: %w", ref.Namespace, ref.Name, err))
			continue
		}
		out.Flagged = append(out.Flagged, ref)
	}
	for _, node := range plan.RemoveConfirmation {
		if err := m.writer.removeNodeAnnotation(ctx, node, v1alpha1.ManuallyConfirmedHealthyAnnotation); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("removing the manual confirmation of node %s: %w", node, err))
		}
	}
	return out
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

// createAll carries out creations all at once, each after its node lease is
// taken and rechecked just before it is sent, and records what happened in
// plan order. A plan holds at most the controller's per-sync bound of them
// (50), so that a storm's first resources do not wait for the last ones'
// round trips.
func (m *Manager) createAll(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, creations []health.Creation, obs *Observation, confirm Confirm, out *health.Outcome) {
	type result struct {
		created     *health.Created
		blocked     *health.Blocked
		withdrawn   bool
		unconfirmed bool
		err         error
	}
	results := make([]result, len(creations))
	workqueue.ParallelizeUntil(ctx, len(creations), len(creations), func(i int) {
		c, r := creations[i], &results[i]
		if c.Lease != nil {
			if err := m.leases.Acquire(ctx, *c.Lease); err != nil {
				if why := m.leases.Problem(err); why != "" {
					r.blocked = &health.Blocked{Node: c.Node, Message: why}
				} else {
					r.err = fmt.Errorf("taking the lease of node %s: %w", c.Node, err)
				}
				return
			}
		}
		// After the lease, which may have waited for the client's rate
		// limit: the node may have recovered meanwhile. A lease taken for
		// nothing is released by the next sync.
		why, unconfirmed, err := confirm(ctx, c)
		switch {
		case err != nil:
			r.err = fmt.Errorf("confirming that node %s needs its remediation: %w", c.Node, err)
			return
		case why != "":
			r.blocked, r.withdrawn, r.unconfirmed = &health.Blocked{Node: c.Node, Message: why}, true, unconfirmed
			return
		}
		created, err := m.create(ctx, nhc, c, obs)
		var notOwned *notOwnedError
		var busy *controlPlaneBusyError
		var other *remediatedByOtherError
		switch {
		case errors.As(err, &notOwned), errors.As(err, &busy), errors.As(err, &other):
			r.blocked = &health.Blocked{Node: c.Node, Message: err.Error()}
		case err != nil:
			r.err = fmt.Errorf("creating remediation of node %s from %s %s: %w", c.Node, c.Template.Kind, c.Template.Name, err)
		default:
			r.created = &health.Created{Creation: c, Resource: resource.Reference(created), CreationTime: created.GetCreationTimestamp().Time}
		}
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

func (m *Manager) create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, c health.Creation, obs *Observation) (*unstructured.Unstructured, error) {
	template := obs.templates[bareTemplateRef(c.Template)]
	if template == nil {
		return nil, fmt.Errorf("template %s %s/%s was not read", c.Template.Kind, c.Template.Namespace, c.Template.Name)
	}
	obj, err := newRemediation(template, nhc, c.Node, c.ControlPlane)
	if err != nil {
		return nil, err
	}
	gvr, err := obs.resource(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	key := createKey(nhc.Name, gvr, obj.GetNamespace(), c.Node, template.GetName())
	if err := m.expect(nhc, key, obj.GetName(), obs); err != nil {
		return nil, err
	}
	if c.ControlPlane && !m.inFlight.takeControlPlaneSlot(key) {
		m.inFlight.cancel(key)
		return nil, &controlPlaneBusyError{node: c.Node}
	}
	created, err := m.writer.Create(ctx, gvr, obj, nhc)
	m.checkAccess(gvr, err)
	switch {
	case err != nil && certainlyFailed(err):
		m.inFlight.cancel(key)
	case err == nil:
		m.inFlight.created(key, created.GetUID())
		// A resource that existed already sends no new event; if the cache
		// has it, there is nothing to wait for.
		if cached := m.informers.Get(gvr, created.GetNamespace(), created.GetName()); cached != nil && cached.GetUID() == created.GetUID() {
			m.inFlight.settle(gvr, cached, false)
		}
	}
	return created, err
}

// expect records a create about to be sent. The first remediation of a node
// is not sent while another NodeHealthCheck has a remediation resource for
// the node or a create of one under way: the plan decided from caches that
// may not show it yet (a selector changed a moment ago). The create under
// way is checked first, so that one that settles meanwhile shows in the
// informers.
func (m *Manager) expect(nhc *v1alpha1.NodeHealthCheck, key writeKey, name string, obs *Observation) error {
	if len(obs.Remediations[key.node]) > 0 {
		m.inFlight.expectCreate(key, name)
		return nil
	}
	if other := m.inFlight.expectFirstCreate(key, name); other != "" {
		return &remediatedByOtherError{node: key.node, other: other}
	}
	if other := m.informers.OtherOwner(key.node, nhc.UID); other != "" {
		m.inFlight.cancel(key)
		return &remediatedByOtherError{node: key.node, other: other}
	}
	return nil
}

// remediatedByOtherError reports a first remediation that is not sent,
// because another NodeHealthCheck remediates the node.
type remediatedByOtherError struct {
	node, other string
}

func (e *remediatedByOtherError) Error() string {
	return fmt.Sprintf("NodeHealthCheck %s remediates node %s, or is starting to; only one NodeHealthCheck remediates a node, and this one leaves it alone", e.other, e.node)
}

// controlPlaneBusyError reports a control-plane remediation that waits,
// because another control-plane node's remediation was started meanwhile.
type controlPlaneBusyError struct {
	node string
}

func (e *controlPlaneBusyError) Error() string {
	return fmt.Sprintf("another control-plane node's remediation has just started; %s waits, to protect etcd quorum", e.node)
}

// deleteAll carries out deletions in parallel and records what happened in
// plan order.
func (m *Manager) deleteAll(ctx context.Context, nhc string, deletions []health.Deletion, obs *Observation, out *health.Outcome) {
	errs := inParallel(ctx, len(deletions), func(i int) error { return m.delete(ctx, nhc, obs, deletions[i]) })
	for i, del := range deletions {
		if errs[i] != nil {
			out.Errors = append(out.Errors, fmt.Errorf("deleting %s %s/%s: %w", del.Resource.Kind, del.Resource.Namespace, del.Resource.Name, errs[i]))
			continue
		}
		out.Deleted = append(out.Deleted, del)
	}
}

func (m *Manager) delete(ctx context.Context, nhc string, obs *Observation, del health.Deletion) error {
	ref := del.Resource
	gvr, err := obs.resource(ref.GroupVersionKind())
	if err != nil {
		return err
	}
	m.inFlight.expectDelete(nhc, del.Node, ref.UID)
	err = m.writer.Delete(ctx, gvr, ref)
	m.checkAccess(gvr, err)
	switch {
	case err != nil && certainlyFailed(err):
		m.inFlight.cancel(deleteKey(nhc, ref.UID))
	case err == nil:
		// A resource gone already sends no new event.
		if cached := m.informers.Get(gvr, ref.Namespace, ref.Name); cached == nil || cached.GetUID() != ref.UID {
			m.inFlight.cancel(deleteKey(nhc, ref.UID))
		}
	}
	return err
}

func (m *Manager) annotate(ctx context.Context, obs *Observation, ref corev1.ObjectReference, key string, value *string) error {
	gvr, err := obs.resource(ref.GroupVersionKind())
	if err != nil {
		return err
	}
	err = m.writer.Annotate(ctx, gvr, ref, key, value)
	m.checkAccess(gvr, err)
	return err
}

// checkAccess reports a write that was forbidden: the kind's informer stops
// and every NodeHealthCheck that uses the kind is disabled with the error,
// which names the verb, until access comes back.
func (m *Manager) checkAccess(gvr schema.GroupVersionResource, err error) {
	if apierrors.IsForbidden(err) {
		m.informers.Forbidden(gvr, err)
	}
}

func (o *Observation) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	gvr, ok := o.resources[gvk]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("kind %s is not watched", gvk)
	}
	return gvr, nil
}

// keepLeases renews and releases the leases a plan says to, in parallel.
func (m *Manager) keepLeases(ctx context.Context, nhc string, plan *health.Plan) []error {
	var errs []error
	renewed := inParallel(ctx, len(plan.RenewLeases), func(i int) error { return m.leases.Renew(ctx, plan.RenewLeases[i]) })
	for i, err := range renewed {
		if err != nil {
			errs = append(errs, fmt.Errorf("renewing the lease of node %s: %w", plan.RenewLeases[i].Node, err))
		}
	}
	holder := health.LeaseHolder(nhc)
	released := inParallel(ctx, len(plan.ReleaseLeases), func(i int) error { return m.leases.Release(ctx, plan.ReleaseLeases[i], holder) })
	for i, err := range released {
		if err != nil {
			errs = append(errs, fmt.Errorf("releasing the lease of node %s: %w", plan.ReleaseLeases[i], err))
		}
	}
	return errs
}
