package remediation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// logCreateUnseen is logged at level 2 when the API server has a created
// resource that its informer has not shown within ExpectationsTTL.
const logCreateUnseen = "Created remediation not shown by its informer yet; its node waits"

// Why control-plane remediations cannot all be known, and so no
// control-plane remediation starts.
const (
	messageKindsNotWatchedYet = "the remediation kinds of every NodeHealthCheck are not watched yet"
	messageKindsUnknown       = "the remediation resources %s cannot be read, and may hold a control-plane remediation"
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
	// TemplateProblem, when set, is why the templates cannot be used.
	TemplateProblem *health.Problem
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
	// informer is tried again. None of these comes with an event.
	RefreshAfter time.Duration
	// OtherOwners are, by node, the other NodeHealthChecks with remediation
	// resources for it, of any kind watched.
	OtherOwners map[string][]Owner

	templates map[corev1.ObjectReference]*unstructured.Unstructured
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// Read reads a NodeHealthCheck's templates and remediation resources from
// the informers of the kinds Watch found, or with GET where a template kind
// may not be watched, and what else its evaluation needs: the control-plane
// nodes under remediation, the other owners, the node leases. An error is
// worth a retry.
func (m *Manager) Read(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, w Watched) (Observation, error) {
	obs := Observation{
		Ready:                 true,
		TemplateProblem:       w.problem,
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
	m.lookUpLapsed(ctx)
	m.forgetUnserved()
	obs.PendingNodes = m.expectations.pendingNodes(nhc.Name)
	reserved := m.controlPlane.nodes()
	now := m.informers.clock.Now()
	var templates []*unstructured.Unstructured
	for _, tmpl := range w.templates {
		read, err := m.templates.get(tmpl)
		if err != nil {
			return obs, err
		}
		obs.Ready = obs.Ready && read.ready
		obs.RefreshAfter = sooner(obs.RefreshAfter, read.refreshAfter)
		if read.problem != nil {
			obs.problem(read.problem)
		}
		if read.obj != nil {
			obs.templates[templateKey(tmpl.Ref)] = read.obj
			templates = append(templates, read.obj)
		}
		obs.refreshWith(m.informers.State(tmpl.Resource), now)
	}
	if obs.TemplateProblem == nil {
		obs.TemplateProblem = checkKinds(templates)
	}
	for _, gvr := range obs.resources {
		state := m.informers.State(gvr)
		obs.refreshWith(state, now)
		if !state.Synced {
			obs.Ready = false
			if problem := m.unreadable(gvr, state.Err); problem != nil {
				obs.problem(problem)
			}
			continue
		}
		for _, obj := range m.informers.ownedBy(gvr, nhc.UID) {
			node := NodeOf(obj)
			obs.Remediations[node] = append(obs.Remediations[node], Summarize(obj))
		}
	}
	m.readOwnedElsewhere(&obs, nhc)
	if m.informers.lookingWithinGrace() {
		// Remediations that outlived their NodeHealthCheck may hold any
		// node: decide once they are known.
		obs.Ready = false
	}
	m.readControlPlane(&obs, reserved)
	obs.OtherOwners = m.informers.otherOwners(nhc.UID)
	if m.leases != nil {
		// Never decide without knowing who holds which node.
		leases, problem, err := m.leases.read()
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

// lookUpLapsed looks up at the API server the creates of every
// NodeHealthCheck that the informers have not shown within ExpectationsTTL
// (seed 118367: a disabled NodeHealthCheck, which does not sync, let its
// create lapse, and another one remediated the node beside it). One the API
// server has is expected again: its node gets no new action, and its
// status keeps the resource, until the informer shows it; believing the
// cache instead would drop it from the status and create a second
// remediation beside it (make sim, seed 3557: a watch that stopped
// sending). One that is gone lapses; one that cannot be read (forbidden,
// or any error) is expected again, and looked up again at the next sync.
// The control-plane reservations of every NodeHealthCheck that lapsed are
// looked up the same way: one found and not shown, or unreadable, holds on.
func (m *Manager) lookUpLapsed(ctx context.Context) {
	for _, l := range m.expectations.lapsedCreations() {
		if m.unseen(ctx, l.resource, l.namespace, l.name, l.nhc) {
			klog.FromContext(ctx).V(2).Info(logCreateUnseen, "nodeHealthCheck", l.nhc, "node", l.node, "resource", l.resource, "name", l.name)
			m.expectations.expectAgain(l)
		}
	}
	for _, l := range m.controlPlane.lapsed() {
		if m.unseen(ctx, l.resource, l.namespace, l.name, "") {
			m.controlPlane.renew(l)
		}
	}
}

// unseen tells whether a resource may exist at the API server, owned by the
// NodeHealthCheck owner names unless it is empty, without its informer
// showing it: found and not in the cache, or not known (any error but 404).
func (m *Manager) unseen(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, owner string) bool {
	obj, err := m.writer.dynamic.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), err == nil && owner != "" && !slices.Contains(OwnerNames(obj), owner):
		return false
	case apierrors.IsForbidden(err) && !m.served(gvr):
		// Uninstalled with its role: its resources went with its CRD
		// (make sim, seed 8626 with FOCUS=control-plane).
		return false
	case err == nil:
		cached := m.informers.Get(gvr, namespace, name)
		return cached == nil || cached.GetUID() != obj.GetUID()
	}
	return true
}

// readOwnedElsewhere adds the NodeHealthCheck's resources that the synced
// informers of other kinds show: a kind neither its templates nor its
// status name any more (the status dropped it while the kind's watch was
// silent) is still watched while it holds resources of NodeHealthChecks,
// and they are its own to list and clean up (make sim, seed 118367: they
// were never listed again).
func (m *Manager) readOwnedElsewhere(obs *Observation, nhc *v1alpha1.NodeHealthCheck) {
	known := map[schema.GroupVersionResource]bool{}
	for _, gvr := range obs.resources {
		known[gvr] = true
	}
	for _, gvr := range m.informers.Running() {
		if known[gvr] || !m.informers.State(gvr).Synced {
			continue
		}
		for _, obj := range m.informers.ownedBy(gvr, nhc.UID) {
			if _, ok := obs.resources[obj.GroupVersionKind()]; !ok {
				resources := maps.Clone(obs.resources)
				if resources == nil {
					resources = map[schema.GroupVersionKind]schema.GroupVersionResource{}
				}
				resources[obj.GroupVersionKind()] = gvr
				obs.resources = resources
			}
			node := NodeOf(obj)
			obs.Remediations[node] = append(obs.Remediations[node], Summarize(obj))
		}
	}
}

// forgetUnserved drops what the caches of kinds stopped for a lasting
// error showed once the API no longer serves them (looked up again at most
// every 10 s while there are such kinds): a CRD's resources are deleted
// with it. An uninstalled kind whose role went too answers 403, not 404,
// and would otherwise hold its nodes for good (make sim, seeds 109151 and
// 1947).
func (m *Manager) forgetUnserved() {
	for _, gvr := range m.informers.remembering() {
		if !m.served(gvr) {
			m.informers.forgetUnserved(gvr)
		}
	}
}

// served tells whether the API still serves a kind, looking it up again
// (at most every 10 s) first; an answer other than "no such kind" counts
// as served.
func (m *Manager) served(gvr schema.GroupVersionResource) bool {
	if m.templates == nil {
		return true
	}
	m.templates.rediscover()
	_, err := m.templates.mapper.KindFor(gvr)
	return !meta.IsNoMatchError(err)
}

// readControlPlane reads the control-plane nodes under remediation: quorum
// does not care who remediates, so every kind any NodeHealthCheck uses
// counts, whoever owns the resource, and so do the creates under way and
// what a kind stopped for a lasting error last showed. They are known once
// every NodeHealthCheck's kinds are watched, and synced or stopped for a
// lasting error (unknownRemediations).
func (m *Manager) readControlPlane(obs *Observation, reserved []string) {
	for _, node := range m.informers.controlPlaneNodes() {
		obs.BusyControlPlaneNodes[node] = true
	}
	for _, node := range reserved {
		obs.BusyControlPlaneNodes[node] = true
	}
	switch unknown := m.informers.unknownRemediations(); {
	case !m.everyKindWatched.Load():
		obs.ControlPlaneUnknown = messageKindsNotWatchedYet
	case len(unknown) > 0:
		obs.ControlPlaneUnknown = fmt.Sprintf(messageKindsUnknown, kindList(unknown))
	}
}

// unreadable says why a remediation kind whose informer has not synced
// cannot be read: without its resources, evaluating could lose
// remediations, so the NodeHealthCheck is disabled with what to fix. A kind
// that is forbidden or no longer served makes the API be rediscovered, so
// that it drops out of what is watched once it is gone. Nil while the
// informer is starting.
func (m *Manager) unreadable(gvr schema.GroupVersionResource, err error) *health.Problem {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		// Authorization comes first: a kind uninstalled together with its
		// role answers 403 too. The API is looked up again (at most every
		// 10 s), so that a kind no longer served drops out of what is
		// watched, and a kind only a status listed no longer disables.
		m.templates.rediscover()
		return notFound(fmt.Sprintf(messageRemediationsForbidden, gvr.GroupResource(), err, gvr.GroupResource()))
	case apierrors.IsNotFound(err):
		m.templates.rediscover()
		return notFound(fmt.Sprintf(messageRemediationsGone, gvr.GroupResource()))
	}
	return notFound(fmt.Sprintf(messageRemediationsFailing, gvr.GroupResource(), err))
}

// refreshWith reads again when a stopped informer is tried again.
func (o *Observation) refreshWith(state KindState, now time.Time) {
	if !state.RetryAt.IsZero() {
		o.RefreshAfter = sooner(o.RefreshAfter, max(state.RetryAt.Sub(now), time.Millisecond))
	}
}

func (o *Observation) problem(p *health.Problem) {
	if o.TemplateProblem == nil {
		o.TemplateProblem = p
	}
}
