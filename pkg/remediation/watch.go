package remediation

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
)

// kindRetryInterval is how soon a NodeHealthCheck whose template kind is not
// served looks it up again: no event tells of a CRD installed later.
const kindRetryInterval = kinds.RetryInterval

// Watched is what keeping a NodeHealthCheck's kinds watched found: its
// templates resolved to their kinds, and the kinds of its remediation
// resources. Read reads what the informers of these kinds show.
type Watched struct {
	// templates are the templates resolved, in the spec's order.
	templates []Template
	// problem is why a template reference cannot be used, if one cannot.
	problem *health.Problem
	// resources are the kinds of the remediation resources: those of its
	// templates, those its status lists, whose resources must still be
	// cleaned up after the spec dropped their template, and those of its
	// creates under way.
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
	// retryAfter is how soon a kind that is not served is looked up again.
	retryAfter time.Duration
}

// Watch resolves a NodeHealthCheck's templates, and starts the informers of
// their kinds and of the resources its status lists, and stops those it no
// longer needs. An error (discovery failed) is worth a retry.
func (m *Manager) Watch(nhc *v1alpha1.NodeHealthCheck) (Watched, error) {
	w := Watched{resources: map[schema.GroupVersionKind]schema.GroupVersionResource{}}
	var used kinds.Kinds
	for _, ref := range nhc.Spec.TemplateRefs() {
		tmpl, problem, err := m.templates.resolve(ref)
		if err != nil {
			return w, err
		}
		if problem != nil {
			if w.problem == nil {
				w.problem = problem
			}
			if problem.Reason == v1alpha1.ReasonTemplateNotFound {
				w.retryAfter = kindRetryInterval
			}
			continue
		}
		w.templates = append(w.templates, tmpl)
		used.Templates = append(used.Templates, kinds.NamedTemplate{
			Ref: kinds.TemplateRef{Resource: tmpl.Resource, Namespace: tmpl.Namespace, Name: tmpl.Ref.Name}, Kind: tmpl.Ref.Kind})
		w.resources[tmpl.Remediation.GroupVersion().WithKind(health.RemediationKind(ref.Kind))] = tmpl.Remediation
	}
	if w.problem == nil {
		w.problem = checkDistinct(w.templates)
	}
	eachRecorded(nhc, func(_ string, rem *v1alpha1.Remediation) {
		gvk := rem.Resource.GroupVersionKind()
		if _, known := w.resources[gvk]; known {
			return
		}
		if mapping, err := m.templates.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			w.resources[gvk] = mapping.Resource
		}
	})
	// A create under way stays watched until its informer shows it, even
	// if the spec dropped its template meanwhile: unwatched, its kind would
	// never show it, and the status would never list it.
	for _, gvr := range m.inFlight.pendingResources(nhc.Name) {
		if gvk, err := m.templates.mapper.KindFor(gvr); err == nil {
			if _, known := w.resources[gvk]; !known {
				w.resources[gvk] = gvr
			}
		}
	}
	for _, gvr := range w.resources {
		used.Remediations = append(used.Remediations, gvr)
	}
	m.informers.Use(nhc.Name, used)
	return w, nil
}

// WatchAll watches the kinds of every NodeHealthCheck that list returns,
// and looks for remediation resources that outlived their NodeHealthCheck
// (leftovers.go), before any of them starts a control-plane remediation:
// after a start or a failover, the remediations of one NodeHealthCheck's
// kinds must not go unseen by another that syncs first. Once it succeeded, it does nothing,
// and the control-plane nodes under remediation are known once the
// informers synced; each NodeHealthCheck's own syncs keep its kinds watched.
func (m *Manager) WatchAll(list func() ([]*v1alpha1.NodeHealthCheck, error)) error {
	if m.everyKindWatched.Load() {
		return nil
	}
	nhcs, err := list()
	if err != nil {
		return err
	}
	var errs []error
	for _, nhc := range nhcs {
		if _, err := m.Watch(nhc); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := m.lookForLeftovers(); err != nil {
		return err
	}
	m.everyKindWatched.Store(true)
	return nil
}
