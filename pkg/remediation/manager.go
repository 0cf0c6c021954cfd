package remediation

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Manager reads the remediation state of NodeHealthChecks from the
// informers and carries out their plans.
type Manager struct {
	informers    *Informers
	templates    *Templates
	expectations *Expectations
	writer       *Writer
	controlPlane *controlPlaneReservations
	// leases are the node leases; nil when the controller takes none.
	leases *NodeLeases

	mu sync.Mutex
	// handlers hear of every change, after the expectations.
	handlers []ResourceChangeFunc
}

// ResourceChangeFunc hears of a change of a template or remediation
// resource that the informers see; deleted is true for deletions, when obj
// is the last state known. confirmed names the NodeHealthChecks whose own
// create the change confirms: the sync that sent it recorded the outcome.
type ResourceChangeFunc func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string)

// NewManager returns a manager; nil leases takes no node leases. The
// expectations hear of the informers' changes before any handler, so that a
// NodeHealthCheck woken by a change finds its expectations settled.
func NewManager(informers *Informers, templates *Templates, expectations *Expectations, writer *Writer, leases *NodeLeases) *Manager {
	m := &Manager{informers: informers, templates: templates, expectations: expectations, writer: writer, controlPlane: newControlPlaneReservations(), leases: leases}
	informers.AddChangeHandler(m.changed)
	return m
}

// AddChangeHandler adds a handler that hears of every change of a template
// or remediation resource the informers see.
func (m *Manager) AddChangeHandler(handler ResourceChangeFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handlers = append(m.handlers, handler)
}

// changed settles the expectations and the control-plane reservations a
// change satisfies, then tells the handlers.
func (m *Manager) changed(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	confirmed := m.expectations.settle(gvr, obj, deleted)
	m.controlPlane.settle(gvr, obj, deleted)
	m.mu.Lock()
	handlers := m.handlers
	m.mu.Unlock()
	for _, handler := range handlers {
		handler(gvr, obj, deleted, confirmed)
	}
}

// AddLeaseChangeHandler adds a handler that hears of every change of a node
// lease; without leases, it never hears of any.
func (m *Manager) AddLeaseChangeHandler(handler LeaseChangeFunc) error {
	if m.leases == nil {
		return nil
	}
	return m.leases.AddChangeHandler(handler)
}

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
	// BusyControlPlaneNodes are control-plane nodes with a remediation of any
	// owner and any kind watched, or with a create of one under way.
	BusyControlPlaneNodes map[string]bool
	// Leases are the node leases; nil when the controller takes none.
	Leases *health.Leases
	// RefreshAfter, when set, is how soon a template read with GET (its kind
	// may not be watched) is read again: sync no later, since its changes
	// come with no event.
	RefreshAfter time.Duration
	// OtherOwners are, by node, the other NodeHealthChecks with remediation
	// resources for it, of any kind watched.
	OtherOwners map[string][]Owner

	templates map[corev1.ObjectReference]*unstructured.Unstructured
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// templateKey identifies a template reference, whatever else it carries.
func templateKey(ref corev1.ObjectReference) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// Read resolves a NodeHealthCheck's templates, starts the informers of their
// kinds and stops those it no longer needs, and reads its remediation
// resources from them. The kinds of resources its status lists stay watched
// too, so that resources of a template the spec dropped are still cleaned
// up. A template kind that may not be watched is left out, and its templates
// are read with GET. An error is worth a retry.
func (m *Manager) Read(nhc *v1alpha1.NodeHealthCheck) (Observation, error) {
	obs := Observation{
		Ready:                 true,
		Remediations:          map[string][]health.Remediation{},
		BusyControlPlaneNodes: map[string]bool{},
		templates:             map[corev1.ObjectReference]*unstructured.Unstructured{},
		resources:             map[schema.GroupVersionKind]schema.GroupVersionResource{},
	}
	// The writes under way first, the caches after, as the in-tree
	// controllers check their expectations before they list: a write the
	// informer shows between the two reads is then both pending and in the
	// cache. The other order misses it in both, and a resource whose
	// deletion settled just after the listing still showed it was deleted
	// a second time (in a storm's recovery, 3 of 300).
	obs.PendingNodes = m.expectations.pendingNodes(nhc.Name)
	reserved := m.controlPlane.nodes()
	var resolved []Template
	var watched []schema.GroupVersionResource
	for _, ref := range nhc.Spec.TemplateRefs() {
		tmpl, problem, err := m.templates.resolve(ref)
		if err != nil {
			return obs, err
		}
		if problem != nil {
			obs.problem(problem)
			continue
		}
		resolved = append(resolved, tmpl)
		watched = append(watched, tmpl.Remediation)
		if m.templates.watched(tmpl.Resource) {
			watched = append(watched, tmpl.Resource)
		}
		obs.resources[tmpl.Remediation.GroupVersion().WithKind(health.RemediationKind(ref.Kind))] = tmpl.Remediation
	}
	for _, entry := range nhc.Status.UnhealthyNodes {
		for _, rem := range entry.Remediations {
			gvk := rem.Resource.GroupVersionKind()
			if _, known := obs.resources[gvk]; known {
				continue
			}
			if mapping, err := m.templates.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
				obs.resources[gvk] = mapping.Resource
				watched = append(watched, mapping.Resource)
			}
		}
	}
	m.informers.Use(nhc.Name, watched...)

	var templates []*unstructured.Unstructured
	for _, tmpl := range resolved {
		read, err := m.templates.get(tmpl)
		if err != nil {
			return obs, err
		}
		obs.Ready = obs.Ready && read.ready
		if read.refreshAfter > 0 && (obs.RefreshAfter == 0 || read.refreshAfter < obs.RefreshAfter) {
			obs.RefreshAfter = read.refreshAfter
		}
		if read.problem != nil {
			obs.problem(read.problem)
		}
		if read.obj != nil {
			obs.templates[templateKey(tmpl.Ref)] = read.obj
			templates = append(templates, read.obj)
		}
	}
	// A template kind found unwatchable just now stops being watched now,
	// instead of retrying until the next Read.
	unwatched := func(gvr schema.GroupVersionResource) bool { return !m.templates.watched(gvr) }
	if slices.ContainsFunc(watched, unwatched) {
		m.informers.Use(nhc.Name, slices.DeleteFunc(watched, unwatched)...)
	}
	if obs.TemplateProblem == nil {
		obs.TemplateProblem = checkKinds(templates)
	}
	for _, gvr := range obs.resources {
		if !m.informers.Synced(gvr) {
			obs.Ready = false
			if problem := m.unwatchable(gvr); problem != nil {
				obs.problem(problem)
			}
			continue
		}
		for _, obj := range m.informers.ownedBy(gvr, nhc.UID) {
			node := NodeOf(obj)
			obs.Remediations[node] = append(obs.Remediations[node], Summarize(obj))
		}
	}
	// Quorum does not care who remediates: every kind watched counts, and
	// so do the creates under way.
	for _, node := range m.informers.controlPlaneNodes() {
		obs.BusyControlPlaneNodes[node] = true
	}
	for _, node := range reserved {
		obs.BusyControlPlaneNodes[node] = true
	}
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

// unwatchable reports a remediation kind whose informer has not synced and
// keeps failing: without the resources of a kind, evaluating could lose
// remediations, so the NodeHealthCheck is disabled with what to fix. A kind
// that is no longer served makes the API be rediscovered, so that it drops
// out of what is watched.
func (m *Manager) unwatchable(gvr schema.GroupVersionResource) *health.Problem {
	err := m.informers.lastingWatchError(gvr)
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return notFound(fmt.Sprintf("Remediation resources %s cannot be watched: %v. Grant get, list, watch, create, update, patch and delete on %s, for example with a ClusterRole labelled rbac.ext-remediation/aggregate-to-ext-remediation=true",
			gvr.GroupResource(), err, gvr.GroupResource()))
	case apierrors.IsNotFound(err):
		m.templates.rediscover()
		return notFound(fmt.Sprintf("Remediation resources %s are no longer served by the API server: is their remediator uninstalled?", gvr.GroupResource()))
	}
	return notFound(fmt.Sprintf("Remediation resources %s cannot be watched: %v", gvr.GroupResource(), err))
}

func (o *Observation) problem(p *health.Problem) {
	if o.TemplateProblem == nil {
		o.TemplateProblem = p
	}
}

// Forget stops the informers only a deleted NodeHealthCheck used, and drops
// its expectations and reservations.
func (m *Manager) Forget(nhc string) {
	m.informers.Use(nhc)
	m.expectations.forget(nhc)
	m.controlPlane.forget(nhc)
}
