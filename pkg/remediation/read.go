package remediation

import (
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
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

// Seen is what a NodeHealthCheck's decision reads of remediation
// resources and of the writes under way: pkg/gather gathers it, with the
// nodes and the other NodeHealthChecks, into the decision's input.
type Seen struct {
	// Ready is false while an informer the NodeHealthCheck needs, or the
	// node leases' cache, has not synced: decide later.
	Ready bool
	// Problem, when set, is why the templates or the kinds of the
	// remediation resources cannot be used.
	Problem *health.Problem
	// RefreshAfter, when set, is how soon to read again: a template read
	// with GET expires, a kind not served is looked up again, a stopped
	// informer is tried again, a write the informers have not shown lapses
	// and is looked up. None of these comes with an event.
	RefreshAfter time.Duration
	// Remediations are the NodeHealthCheck's resources by node.
	Remediations map[string][]health.Remediation
	// Pending are the nodes with a write of this controller that the
	// informers do not show yet: they get no new action until it shows.
	// Those of an earlier NodeHealthCheck of this name count too.
	Pending map[string]bool
	// OwnWritePending is true while a write of this NodeHealthCheck, not
	// of an earlier one of its name, is among them.
	OwnWritePending bool
	// OtherOwners are, by node, the other NodeHealthChecks with remediation
	// resources for it, of any kind watched.
	OtherOwners map[string][]resource.Owner
	// ControlPlane are the control-plane nodes with a remediation resource
	// of any owner, of any kind some NodeHealthCheck uses, or as a kind
	// stopped for a lasting error last showed it.
	ControlPlane []string
	// Reserved are the nodes whose create under way holds the cluster's
	// one control-plane slot.
	Reserved []string
	// ControlPlaneUnknown, when set, is why ControlPlane may be incomplete.
	ControlPlaneUnknown string
	// Unreadable are the kinds, of those the statuses of the other
	// NodeHealthChecks record, whose resources cannot be known now.
	Unreadable map[schema.GroupVersionKind]bool
	// Leases are the node leases; nil when the controller takes none.
	Leases *health.Leases
}

// Read reads what a NodeHealthCheck's decision needs of remediation
// resources, from the caches alone (it sends no request, and maps no
// kind): its templates as Watch read them, its remediation resources from
// the informers of the kinds Watch found, the control-plane nodes under
// remediation, the other owners of its nodes, which kinds that the other
// NodeHealthChecks' statuses record cannot be read, and the node leases.
// The kinds it finds the NodeHealthCheck's resources of elsewhere join w,
// for the writes. An error is worth a retry.
func (o *Observer) Read(nhc *v1alpha1.NodeHealthCheck, w *Watched) (Seen, error) {
	seen := Seen{Ready: true, Problem: w.problem, Remediations: map[string][]health.Remediation{}, RefreshAfter: w.retryAfter}
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
		seen.refreshWith(state, now)
		if !state.Synced {
			seen.Ready = false
			if problem := kindProblem(gvr, state.Err); problem != nil {
				seen.addProblem(problem)
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
			seen.addProblem(problem)
		}
		seen.Leases, seen.Ready = leases, seen.Ready && leases != nil
	}
	return seen, nil
}

// readTemplates reads the templates as Watch read them, and checks them
// together.
func (o *Observer) readTemplates(seen *Seen, w *Watched, now time.Time) {
	var templates []*unstructured.Unstructured
	for i, tmpl := range w.templates {
		read := w.reads[i]
		seen.Ready = seen.Ready && read.ready
		seen.RefreshAfter = health.Sooner(seen.RefreshAfter, read.refreshAfter)
		if read.problem != nil {
			seen.addProblem(read.problem)
		}
		if read.obj != nil {
			templates = append(templates, read.obj)
		}
		seen.refreshWith(o.informers.State(tmpl.Resource), now)
	}
	if seen.Problem == nil {
		seen.Problem = checkKinds(templates)
	}
}

// readOwnedElsewhere adds the NodeHealthCheck's resources that the synced
// informers of other kinds show: a kind neither its templates nor its
// status name any more (the status dropped it while the kind's watch was
// silent) is still watched while it holds resources of NodeHealthChecks,
// and they are its own to list and clean up: otherwise nothing would list
// them again.
func (o *Observer) readOwnedElsewhere(seen *Seen, w *Watched, nhc *v1alpha1.NodeHealthCheck) {
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
func (o *Observer) readControlPlane(seen *Seen) {
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
		return notFound(fmt.Sprintf(messageRemediationsForbidden, gvr.GroupResource(), err, gvr.GroupResource()))
	case apierrors.IsNotFound(err):
		return notFound(fmt.Sprintf(messageRemediationsGone, gvr.GroupResource()))
	}
	return notFound(fmt.Sprintf(messageRemediationsFailing, gvr.GroupResource(), err))
}

// refreshWith reads again when a stopped informer is tried again.
func (o *Seen) refreshWith(state kinds.State, now time.Time) {
	if !state.RetryAt.IsZero() {
		o.RefreshAfter = health.Sooner(o.RefreshAfter, max(state.RetryAt.Sub(now), time.Millisecond))
	}
}

// addProblem keeps the first problem found.
func (o *Seen) addProblem(p *health.Problem) {
	if o.Problem == nil {
		o.Problem = p
	}
}
