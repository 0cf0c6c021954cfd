package remediation

import (
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// Observation is what a NodeHealthCheck's evaluation needs from the cluster
// besides nodes.
type Observation struct {
	// Ready is false while an informer the NodeHealthCheck needs has not
	// synced: evaluate later.
	Ready bool
	// PendingNodes are the nodes with a write of this controller that the
	// informers do not show yet: they get no new action until it shows.
	PendingNodes map[string]bool
	// RemediationProblem, when set, is why the templates cannot be used.
	RemediationProblem *health.Problem
	// Remediations are the NodeHealthCheck's resources by node.
	Remediations map[string][]health.Remediation
	// BusyControlPlaneNodes are health.Input's.
	BusyControlPlaneNodes map[string]bool
	// ControlPlaneUnknown is health.Input's.
	ControlPlaneUnknown string
	// Leases are the node leases; nil when the controller takes none.
	Leases *health.Leases
	// RefreshAfter, when set, is how soon to read again: a template read
	// with GET expires, a kind not served is looked up again, a stopped
	// informer is tried again, a write the informers have not shown lapses
	// and is looked up. None of these comes with an event.
	RefreshAfter time.Duration
	// OtherOwners are, by node, the other NodeHealthChecks with remediation
	// resources for it, of any kind watched, or that hold it by their status
	// (readRecorded).
	OtherOwners map[string][]resource.Owner

	templates map[corev1.ObjectReference]*unstructured.Unstructured
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// Read builds what a NodeHealthCheck's evaluation needs besides its nodes,
// from the caches alone (it sends no request): its templates as Watch read
// them, its remediation resources from the informers of the kinds Watch
// found, the control-plane nodes under remediation, the other owners of
// its nodes (in the caches, and in the statuses of others that record
// resources of kinds that cannot be read now), and the node leases. others
// are the other NodeHealthChecks, as the syncs see them. An error is worth
// a retry.
func (o *Observer) Read(nhc *v1alpha1.NodeHealthCheck, w Watched, others []*v1alpha1.NodeHealthCheck) (Observation, error) {
	obs := Observation{
		Ready:                 true,
		RemediationProblem:    w.problem,
		Remediations:          map[string][]health.Remediation{},
		BusyControlPlaneNodes: map[string]bool{},
		RefreshAfter:          w.retryAfter,
		templates:             map[corev1.ObjectReference]*unstructured.Unstructured{},
		resources:             w.resources,
	}
	// The writes under way first, the caches after, as the in-tree
	// controllers check their expectations before they list: a write the
	// informer shows between the two reads is then both pending and in the
	// cache. The other order misses it in both.
	obs.PendingNodes = o.inFlight.pendingNodes(nhc.Name)
	reserved := o.inFlight.controlPlaneNodes()
	now := o.clock.Now()
	if lapse := o.inFlight.nextLapse(); !lapse.IsZero() {
		obs.RefreshAfter = health.Sooner(obs.RefreshAfter, max(lapse.Sub(now), time.Millisecond))
	}
	var templates []*unstructured.Unstructured
	for i, tmpl := range w.templates {
		read := w.reads[i]
		obs.Ready = obs.Ready && read.ready
		obs.RefreshAfter = health.Sooner(obs.RefreshAfter, read.refreshAfter)
		if read.problem != nil {
			obs.problem(read.problem)
		}
		if read.obj != nil {
			obs.templates[bareTemplateRef(tmpl.Ref)] = read.obj
			templates = append(templates, read.obj)
		}
		obs.refreshWith(o.informers.State(tmpl.Resource), now)
	}
	if obs.RemediationProblem == nil {
		obs.RemediationProblem = checkKinds(templates)
	}
	for _, gvr := range obs.resources {
		state := o.informers.State(gvr)
		obs.refreshWith(state, now)
		if !state.Synced {
			obs.Ready = false
			if problem := unreadable(gvr, state.Err); problem != nil {
				obs.problem(problem)
			}
			continue
		}
		for _, obj := range o.informers.OwnedBy(gvr, nhc.UID) {
			node := resource.TargetNode(obj)
			obs.Remediations[node] = append(obs.Remediations[node], resource.Summarize(obj))
		}
	}
	o.readOwnedElsewhere(&obs, nhc)
	if o.informers.LookingWithinGrace() {
		// Remediations that outlived their NodeHealthCheck may hold any
		// node: decide once they are known.
		obs.Ready = false
	}
	o.readControlPlane(&obs, reserved)
	obs.OtherOwners = o.informers.OtherOwners(nhc.UID)
	o.readRecorded(&obs, others)
	if o.leases != nil {
		// Never decide without knowing who holds which node.
		leases, problem, err := o.leases.Read()
		if err != nil {
			return obs, fmt.Errorf("reading node leases: %w", err)
		}
		if problem != nil {
			obs.problem(problem)
		}
		obs.Leases, obs.Ready = leases, obs.Ready && leases != nil
	}
	return obs, nil
}

// readOwnedElsewhere adds the NodeHealthCheck's resources that the synced
// informers of other kinds show: a kind neither its templates nor its
// status name any more (the status dropped it while the kind's watch was
// silent) is still watched while it holds resources of NodeHealthChecks,
// and they are its own to list and clean up: otherwise nothing would list
// them again.
func (o *Observer) readOwnedElsewhere(obs *Observation, nhc *v1alpha1.NodeHealthCheck) {
	known := map[schema.GroupVersionResource]bool{}
	for _, gvr := range obs.resources {
		known[gvr] = true
	}
	for _, gvr := range o.informers.Running() {
		if known[gvr] || !o.informers.State(gvr).Synced {
			continue
		}
		for _, obj := range o.informers.OwnedBy(gvr, nhc.UID) {
			if _, ok := obs.resources[obj.GroupVersionKind()]; !ok {
				resources := maps.Clone(obs.resources)
				if resources == nil {
					resources = map[schema.GroupVersionKind]schema.GroupVersionResource{}
				}
				resources[obj.GroupVersionKind()] = gvr
				obs.resources = resources
			}
			node := resource.TargetNode(obj)
			obs.Remediations[node] = append(obs.Remediations[node], resource.Summarize(obj))
		}
	}
}

// unreadable says why a remediation kind whose informer has not synced
// cannot be read: without its resources, evaluating could lose
// remediations, so the NodeHealthCheck is disabled with what to fix (Watch
// looks the API up again meanwhile, so that a kind no longer served drops
// out of what is watched). Nil while the informer is starting.
func unreadable(gvr schema.GroupVersionResource, err error) *health.Problem {
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
func (o *Observation) refreshWith(state kinds.State, now time.Time) {
	if !state.RetryAt.IsZero() {
		o.RefreshAfter = health.Sooner(o.RefreshAfter, max(state.RetryAt.Sub(now), time.Millisecond))
	}
}

func (o *Observation) problem(p *health.Problem) {
	if o.RemediationProblem == nil {
		o.RemediationProblem = p
	}
}
