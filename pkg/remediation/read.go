package remediation

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// Messages of a remediation kind whose informer cannot read it.
const (
	messageRemediationsForbidden = "Remediation resources %s cannot be watched or written: %v. Grant get, list, watch, create, update, patch and delete on %s, for example with a ClusterRole labelled rbac.ext-remediation/aggregate-to-ext-remediation=true"
	messageRemediationsGone      = "Remediation resources %s are no longer served by the API server: is their remediator uninstalled?"
	messageRemediationsFailing   = "Remediation resources %s cannot be watched: %v"
)

// Why control-plane remediations cannot all be known, and so no
// control-plane remediation starts.
const (
	messageKindsNotWatchedYet = "the remediation kinds of every NodeHealthCheck are not watched yet"
	messageKindsUnknown       = "the remediation resources %s cannot be read, and may hold a control-plane remediation"
)

// Read reads what a NodeHealthCheck's decision needs of remediation
// resources, from the caches alone (it sends no request, and maps no
// kind): its templates as Watch read them, its remediation resources from
// the informers of the kinds Watch found, the control-plane nodes under
// remediation, the other owners of its nodes, which kinds that the other
// NodeHealthChecks' statuses record cannot be read, and the node leases.
// The kinds it finds the NodeHealthCheck's resources of elsewhere join w,
// for the writes. An error is worth a retry.
func (o *Observer) Read(nhc *v1alpha1.NodeHealthCheck, w *Watched) (gather.Seen, error) {
	seen := gather.Seen{Ready: true, Problem: w.problem, Remediations: map[string][]health.Remediation{}, RefreshAfter: w.retryAfter}
	// The writes under way first, the caches after, as the in-tree
	// controllers check their expectations before they list: a write the
	// informer shows between the two reads is then both pending and in the
	// cache. The other order misses it in both.
	seen.Pending = o.ledger.Pending(nhc.Name)
	seen.OwnWritePending = o.ledger.OwnWritePending(nhc.Name, nhc.UID)
	seen.Reserved = o.ledger.ControlPlaneNodes()
	now := o.clock.Now()
	if lapse := o.ledger.NextLapse(); !lapse.IsZero() {
		seen.RefreshAfter = health.Sooner(seen.RefreshAfter, max(lapse.Sub(now), time.Millisecond))
	}
	o.readTemplates(&seen, w, now)
	for _, gvr := range w.resources {
		state := o.informers.State(gvr)
		refreshWith(&seen, state, now)
		if !state.Synced {
			seen.Ready = false
			if problem := kindProblem(gvr, state.Err); problem != nil {
				addProblem(&seen, problem)
			}
			continue
		}
		for _, obj := range o.informers.OwnedBy(gvr, nhc.UID) {
			node := resource.TargetNode(obj)
			seen.Remediations[node] = append(seen.Remediations[node], resource.Summarize(obj))
		}
	}
	o.readOwnedElsewhere(&seen, w, nhc)
	if o.informers.LookingWithinGrace() {
		// Remediations that outlived their NodeHealthCheck may hold any
		// node: decide once they are known.
		seen.Ready = false
	}
	o.readControlPlane(&seen)
	seen.OtherOwners = o.informers.OtherOwners(nhc.UID)
	seen.Unreadable = o.unreadableKinds(w)
	if o.leases != nil {
		// Never decide without knowing who holds which node.
		leases, problem, err := o.leases.Read()
		if err != nil {
			return seen, fmt.Errorf("reading node leases: %w", err)
		}
		if problem != nil {
			addProblem(&seen, problem)
		}
		seen.Leases, seen.Ready = leases, seen.Ready && leases != nil
	}
	return seen, nil
}

// readTemplates reads the templates as Watch read them, and checks them
// together.
func (o *Observer) readTemplates(seen *gather.Seen, w *Watched, now time.Time) {
	var objs []*unstructured.Unstructured
	for i, tmpl := range w.templates {
		read := w.reads[i]
		seen.Ready = seen.Ready && read.Ready
		seen.RefreshAfter = health.Sooner(seen.RefreshAfter, read.RefreshAfter)
		if read.Problem != nil {
			addProblem(seen, read.Problem)
		}
		if read.Obj != nil {
			objs = append(objs, read.Obj)
		}
		refreshWith(seen, o.informers.State(tmpl.Resource), now)
	}
	if seen.Problem == nil {
		seen.Problem = templates.CheckKinds(objs)
	}
}

// readOwnedElsewhere adds the NodeHealthCheck's resources that the synced
// informers of other kinds show: a kind neither its templates nor its
// status name any more (the status dropped it while the kind's watch was
// silent) is still watched while it holds resources of NodeHealthChecks,
// and they are its own to list and clean up: otherwise nothing would list
// them again.
func (o *Observer) readOwnedElsewhere(seen *gather.Seen, w *Watched, nhc *v1alpha1.NodeHealthCheck) {
	if w.resources == nil {
		w.resources = map[schema.GroupVersionKind]schema.GroupVersionResource{}
	}
	known := map[schema.GroupVersionResource]bool{}
	for _, gvr := range w.resources {
		known[gvr] = true
	}
	for _, gvr := range o.informers.Running() {
		if known[gvr] || !o.informers.State(gvr).Synced {
			continue
		}
		for _, obj := range o.informers.OwnedBy(gvr, nhc.UID) {
			if _, ok := w.resources[obj.GroupVersionKind()]; !ok {
				w.resources[obj.GroupVersionKind()] = gvr
			}
			node := resource.TargetNode(obj)
			seen.Remediations[node] = append(seen.Remediations[node], resource.Summarize(obj))
		}
	}
}

// readControlPlane reads the control-plane nodes under remediation in the
// caches: quorum does not care who remediates, so every kind any
// NodeHealthCheck uses counts, whoever owns the resource, and so does what
// a kind stopped for a lasting error last showed. They are known once
// every NodeHealthCheck's kinds are watched, and synced or stopped for a
// lasting error (kinds.Informers.UnknownRemediations).
func (o *Observer) readControlPlane(seen *gather.Seen) {
	seen.ControlPlane = o.informers.ControlPlaneNodes()
	switch unknown := o.informers.UnknownRemediations(); {
	case !o.everyKindWatched.Load():
		seen.ControlPlaneUnknown = messageKindsNotWatchedYet
	case len(unknown) > 0:
		seen.ControlPlaneUnknown = fmt.Sprintf(messageKindsUnknown, kindList(unknown))
	}
}

// unreadableKinds are the kinds the other NodeHealthChecks' statuses record
// whose resources cannot be known: their informer has not synced, is
// failing, or stopped for a lasting reason (forbidden). One no longer
// served has no resources left: the mapper says so (it is not among those
// Watch mapped), or, before its next reset, the kind's list answered 404
// (its resources went with its CRD, as kinds.Informers holds too).
func (o *Observer) unreadableKinds(w *Watched) map[schema.GroupVersionKind]bool {
	var kinds map[schema.GroupVersionKind]bool
	for gvk, gvr := range w.recorded {
		if state := o.informers.State(gvr); state.Synced || apierrors.IsNotFound(state.Err) {
			continue
		}
		if kinds == nil {
			kinds = map[schema.GroupVersionKind]bool{}
		}
		kinds[gvk] = true
	}
	return kinds
}

// kindProblem says why a remediation kind whose informer has not synced
// cannot be read: without its resources, evaluating could lose
// remediations, so the NodeHealthCheck is disabled with what to fix (Watch
// looks the API up again meanwhile, so that a kind no longer served drops
// out of what is watched). Nil while the informer is starting.
func kindProblem(gvr schema.GroupVersionResource, err error) *health.Problem {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		// Authorization comes first: a kind uninstalled together with its
		// role answers 403 too.
		return templates.NotFound(fmt.Sprintf(messageRemediationsForbidden, gvr.GroupResource(), err, gvr.GroupResource()))
	case apierrors.IsNotFound(err):
		return templates.NotFound(fmt.Sprintf(messageRemediationsGone, gvr.GroupResource()))
	}
	return templates.NotFound(fmt.Sprintf(messageRemediationsFailing, gvr.GroupResource(), err))
}

// refreshWith reads again when a stopped informer is tried again.
func refreshWith(seen *gather.Seen, state kinds.State, now time.Time) {
	if !state.RetryAt.IsZero() {
		seen.RefreshAfter = health.Sooner(seen.RefreshAfter, max(state.RetryAt.Sub(now), time.Millisecond))
	}
}

// addProblem keeps the first problem found.
func addProblem(seen *gather.Seen, p *health.Problem) {
	if seen.Problem == nil {
		seen.Problem = p
	}
}
