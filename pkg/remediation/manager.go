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
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Manager reads the remediation state of NodeHealthChecks from the
// informers and carries out health decisions.
type Manager struct {
	informers    *Informers
	templates    *Templates
	expectations *Expectations
	writer       *Writer
	clock        clock.PassiveClock
}

// NewManager returns a manager.
func NewManager(informers *Informers, templates *Templates, expectations *Expectations, writer *Writer, clock clock.PassiveClock) *Manager {
	return &Manager{informers: informers, templates: templates, expectations: expectations, writer: writer, clock: clock}
}

// Observation is what a NodeHealthCheck's evaluation needs from the cluster
// besides nodes.
type Observation struct {
	// Ready is false while an informer the NodeHealthCheck needs has not
	// synced, or its own recent writes are not visible yet: evaluate later.
	Ready bool
	// Problem, when set, disables the NodeHealthCheck.
	Problem *health.Problem
	// Remediations are the NodeHealthCheck's resources by node.
	Remediations map[string][]health.Remediation
	// BusyControlPlaneNodes are control-plane nodes with a remediation of any
	// owner, of a kind the NodeHealthCheck uses.
	BusyControlPlaneNodes map[string]bool

	templates map[corev1.ObjectReference]*unstructured.Unstructured
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// templateKey identifies a template reference, whatever else it carries.
func templateKey(ref corev1.ObjectReference) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// Observe resolves a NodeHealthCheck's templates, makes sure the informers of
// their kinds run, and reads its remediation resources from them. The kinds
// of resources its status lists stay watched too, so that resources of a
// template the spec dropped are still cleaned up. An error is worth a retry.
func (m *Manager) Observe(nhc *v1alpha1.NodeHealthCheck) (Observation, error) {
	obs := Observation{
		Ready:                 true,
		Problem:               health.CheckSpec(&nhc.Spec),
		Remediations:          map[string][]health.Remediation{},
		BusyControlPlaneNodes: map[string]bool{},
		templates:             map[corev1.ObjectReference]*unstructured.Unstructured{},
		resources:             map[schema.GroupVersionKind]schema.GroupVersionResource{},
	}
	var resolved []Template
	var watched []schema.GroupVersionResource
	for _, ref := range templateRefs(&nhc.Spec) {
		tmpl, problem, err := m.templates.Resolve(ref)
		if err != nil {
			return obs, err
		}
		if problem != nil {
			obs.problem(problem)
			continue
		}
		resolved = append(resolved, tmpl)
		watched = append(watched, tmpl.Resource, tmpl.Remediation)
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
		obj, problem, ready := m.templates.Get(tmpl)
		obs.Ready = obs.Ready && ready
		if problem != nil {
			obs.problem(problem)
		}
		if obj != nil {
			obs.templates[templateKey(tmpl.Ref)] = obj
			templates = append(templates, obj)
		}
	}
	if obs.Problem == nil {
		obs.Problem = CheckKinds(templates)
	}
	for _, gvr := range obs.resources {
		if !m.informers.Synced(gvr) {
			obs.Ready = false
			continue
		}
		for _, obj := range m.informers.OwnedBy(gvr, nhc.UID) {
			node := NodeOf(obj)
			obs.Remediations[node] = append(obs.Remediations[node], Summarize(obj))
		}
		for _, node := range m.informers.ControlPlaneNodes(gvr) {
			obs.BusyControlPlaneNodes[node] = true
		}
	}
	obs.Ready = obs.Ready && m.expectations.Satisfied(nhc.Name)
	return obs, nil
}

func (o *Observation) problem(p *health.Problem) {
	if o.Problem == nil {
		o.Problem = p
	}
}

// templateRefs lists the template references of a spec.
func templateRefs(spec *v1alpha1.NodeHealthCheckSpec) []corev1.ObjectReference {
	if spec.RemediationTemplate != nil {
		return []corev1.ObjectReference{*spec.RemediationTemplate}
	}
	refs := make([]corev1.ObjectReference, 0, len(spec.EscalatingRemediations))
	for _, e := range spec.EscalatingRemediations {
		refs = append(refs, e.RemediationTemplate)
	}
	return refs
}

// Outcome is what Apply did.
type Outcome struct {
	Created  []Created
	Deleted  []health.Deletion
	TimedOut []health.TimeOut
	// Flagged are resources newly flagged as older than 48 hours.
	Flagged []corev1.ObjectReference
	// NotOwned are resources that stood where ours would.
	NotOwned []*NotOwnedError
	// Errors are the actions that failed; the others went ahead.
	Errors []error
}

// Created is a remediation resource Apply created.
type Created struct {
	health.Creation
	Resource corev1.ObjectReference
}

// Apply carries out a decision's actions on remediation resources and nodes,
// and records created resources in the decision's status. Each action stands
// alone: one failure does not stop the others, except that a node whose
// time-out annotation failed gets no next step, so that the order holds.
func (m *Manager) Apply(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, d *health.Decision, obs *Observation) Outcome {
	var out Outcome
	now := m.clock.Now().UTC().Format(time.RFC3339)
	failedTimeOut := map[string]bool{}
	for _, to := range d.TimeOut {
		if to.Annotate {
			if err := m.annotate(ctx, obs, to.Resource, v1alpha1.TimedOutAnnotation, &now); err != nil {
				failedTimeOut[to.Node] = true
				out.Errors = append(out.Errors, fmt.Errorf("marking %s %s/%s timed out: %w", to.Resource.Kind, to.Resource.Namespace, to.Resource.Name, err))
				continue
			}
		}
		out.TimedOut = append(out.TimedOut, to)
	}
	for _, c := range d.Create {
		if failedTimeOut[c.Node] {
			continue
		}
		created, err := m.create(ctx, nhc, c, obs)
		var notOwned *NotOwnedError
		switch {
		case errors.As(err, &notOwned):
			out.NotOwned = append(out.NotOwned, notOwned)
		case err != nil:
			out.Errors = append(out.Errors, fmt.Errorf("creating remediation of node %s from %s %s: %w", c.Node, c.Template.Kind, c.Template.Name, err))
		default:
			ref := Reference(created)
			d.RecordCreated(c, ref, created.GetCreationTimestamp().Time)
			out.Created = append(out.Created, Created{Creation: c, Resource: ref})
		}
	}
	for _, del := range d.Delete {
		if err := m.delete(ctx, nhc.Name, obs, del.Resource); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("deleting %s %s/%s: %w", del.Resource.Kind, del.Resource.Namespace, del.Resource.Name, err))
			continue
		}
		out.Deleted = append(out.Deleted, del)
	}
	for _, mark := range d.StartHealthyDelay {
		start := mark.Start.UTC().Format(time.RFC3339)
		if err := m.annotate(ctx, obs, mark.Resource, v1alpha1.HealthyDelayAnnotation, &start); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("starting the healthy delay of %s/%s: %w", mark.Resource.Namespace, mark.Resource.Name, err))
		}
	}
	for _, ref := range d.ClearHealthyDelay {
		if err := m.annotate(ctx, obs, ref, v1alpha1.HealthyDelayAnnotation, nil); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("restarting the healthy delay of %s/%s: %w", ref.Namespace, ref.Name, err))
		}
	}
	flag := v1alpha1.OldRemediationAnnotationValue
	for _, ref := range d.FlagOld {
		if err := m.annotate(ctx, obs, ref, v1alpha1.OldRemediationAnnotation, &flag); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("flagging %s/%s as old: %w", ref.Namespace, ref.Name, err))
			continue
		}
		out.Flagged = append(out.Flagged, ref)
	}
	for _, node := range d.RemoveConfirmation {
		if err := m.writer.RemoveNodeAnnotation(ctx, node, v1alpha1.ManuallyConfirmedHealthyAnnotation); err != nil {
			out.Errors = append(out.Errors, fmt.Errorf("removing the manual confirmation of node %s: %w", node, err))
		}
	}
	return out
}

func (m *Manager) create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, c health.Creation, obs *Observation) (*unstructured.Unstructured, error) {
	template := obs.templates[templateKey(c.Template)]
	if template == nil {
		return nil, fmt.Errorf("template %s %s/%s was not read", c.Template.Kind, c.Template.Namespace, c.Template.Name)
	}
	obj, err := NewRemediation(template, nhc, c.Node, c.ControlPlane)
	if err != nil {
		return nil, err
	}
	gvr, err := obs.resource(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	m.expectations.ExpectCreation(nhc.Name, gvr, obj.GetNamespace(), c.Node, template.GetName())
	created, err := m.writer.Create(ctx, gvr, obj, nhc)
	switch {
	case err != nil && certainlyFailed(err):
		m.expectations.ForgetCreation(nhc.Name, gvr, obj.GetNamespace(), c.Node, template.GetName())
	case err == nil:
		// A resource that existed already sends no new event; if the cache
		// has it, there is nothing to wait for.
		if cached := m.informers.Get(gvr, created.GetNamespace(), created.GetName()); cached != nil && cached.GetUID() == created.GetUID() {
			m.expectations.Observe(gvr, cached, false)
		}
	}
	return created, err
}

func (m *Manager) delete(ctx context.Context, nhc string, obs *Observation, ref corev1.ObjectReference) error {
	gvr, err := obs.resource(ref.GroupVersionKind())
	if err != nil {
		return err
	}
	m.expectations.ExpectDeletion(nhc, ref.UID)
	err = m.writer.Delete(ctx, gvr, ref)
	switch {
	case err != nil && certainlyFailed(err):
		m.expectations.ForgetDeletion(nhc, ref.UID)
	case err == nil:
		// A resource gone already sends no new event.
		if cached := m.informers.Get(gvr, ref.Namespace, ref.Name); cached == nil || cached.GetUID() != ref.UID {
			m.expectations.ForgetDeletion(nhc, ref.UID)
		}
	}
	return err
}

func (m *Manager) annotate(ctx context.Context, obs *Observation, ref corev1.ObjectReference, key string, value *string) error {
	gvr, err := obs.resource(ref.GroupVersionKind())
	if err != nil {
		return err
	}
	return m.writer.Annotate(ctx, gvr, ref, key, value)
}

func (o *Observation) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	gvr, ok := o.resources[gvk]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("kind %s is not watched", gvk)
	}
	return gvr, nil
}

// certainlyFailed tells whether a write surely did not happen, as opposed
// to a timeout or a lost connection, after which it may have. A 429 was
// rejected before anything happened.
func certainlyFailed(err error) bool {
	var notOwned *NotOwnedError
	if errors.As(err, &notOwned) {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code >= 400 && code < 500 && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err)
}
