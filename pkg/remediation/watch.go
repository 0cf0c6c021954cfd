package remediation

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// kindRetryInterval is how soon a NodeHealthCheck whose template kind is not
// served looks it up again: no event tells of a CRD installed later.
const kindRetryInterval = kinds.RetryInterval

// Watch resolves a NodeHealthCheck's templates, starts the informers of
// their kinds and of the resources its status lists, and stops those it no
// longer needs; then it reads the templates, from their informers or with
// GET where their kind may not be watched, and looks the API up again where
// a kind may have left it; last, it maps the kinds of the resources the
// statuses of others, the other NodeHealthChecks, record. What Read needs
// from the API server is fetched here, so that Read sends no request. An
// error (discovery or a GET failed) is worth a retry.
func (o *Observer) Watch(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, others []*v1alpha1.NodeHealthCheck) (*Watched, error) {
	w, err := o.watch(ctx, nhc)
	if err != nil {
		return nil, err
	}
	o.forgetUnserved(ctx)
	for _, gvr := range w.resources {
		if state := o.informers.State(gvr); !state.Synced && (apierrors.IsForbidden(state.Err) || apierrors.IsNotFound(state.Err)) {
			// A kind uninstalled together with its role answers 403 too:
			// looked up again (at most every 10 s), a kind no longer
			// served drops out of what is watched.
			o.templates.Rediscover()
		}
	}
	for _, tmpl := range w.templates {
		read, err := o.templates.Get(ctx, tmpl)
		if err != nil {
			return nil, err
		}
		w.reads = append(w.reads, read)
	}
	w.recorded = o.mapRecorded(ctx, others)
	return w, nil
}

// mapRecorded maps the kinds of the resources the statuses of nhcs record,
// as the mapper knows them (a mapper reset since reads again): Read tells
// from them, and their informers' states, which kinds cannot be read.
func (o *Observer) mapRecorded(ctx context.Context, nhcs []*v1alpha1.NodeHealthCheck) map[schema.GroupVersionKind]schema.GroupVersionResource {
	mapped := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	known := map[schema.GroupVersionKind]bool{}
	for _, nhc := range nhcs {
		for _, rem := range nhc.Status.RecordedRemediations() {
			gvk := rem.Resource.GroupVersionKind()
			if known[gvk] {
				continue
			}
			known[gvk] = true
			if gvr, err := o.templates.ResourceOf(ctx, gvk); err == nil {
				mapped[gvk] = gvr
			}
		}
	}
	return mapped
}

// watch keeps a NodeHealthCheck's kinds watched, and says which they are.
func (o *Observer) watch(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (*Watched, error) {
	w := &Watched{resources: map[schema.GroupVersionKind]schema.GroupVersionResource{}}
	var used kinds.Kinds
	for _, ref := range nhc.Spec.TemplateRefs() {
		tmpl, problem, err := o.templates.Resolve(ctx, ref)
		if err != nil {
			return nil, err
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
		w.problem = templates.CheckDistinct(w.templates)
	}
	for _, rem := range nhc.Status.RecordedRemediations() {
		gvk := rem.Resource.GroupVersionKind()
		if _, known := w.resources[gvk]; known {
			continue
		}
		if gvr, err := o.templates.ResourceOf(ctx, gvk); err == nil {
			w.resources[gvk] = gvr
		}
	}
	// A create under way stays watched until its informer shows it, even
	// if the spec dropped its template meanwhile: unwatched, its kind would
	// never show it, and the status would never list it.
	for _, gvr := range o.ledger.PendingResources(nhc.Name) {
		if gvk, err := o.templates.KindOf(ctx, gvr); err == nil {
			if _, known := w.resources[gvk]; !known {
				w.resources[gvk] = gvr
			}
		}
	}
	for _, gvr := range w.resources {
		used.Remediations = append(used.Remediations, gvr)
	}
	o.informers.Use(nhc.Name, used)
	return w, nil
}

// WatchAll watches the kinds of every NodeHealthCheck that list returns,
// and looks for remediation resources that outlived their NodeHealthCheck
// (leftovers.go), before any of them starts a control-plane remediation:
// after a start or a failover, the remediations of one NodeHealthCheck's
// kinds must not go unseen by another that syncs first. Once it succeeded,
// it does nothing, and the control-plane nodes under remediation are known
// once the informers synced; each NodeHealthCheck's own syncs keep its
// kinds watched.
func (o *Observer) WatchAll(ctx context.Context, list func() ([]*v1alpha1.NodeHealthCheck, error)) error {
	if o.everyKindWatched.Load() {
		return nil
	}
	nhcs, err := list()
	if err != nil {
		return err
	}
	var errs []error
	for _, nhc := range nhcs {
		if _, err := o.watch(ctx, nhc); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := o.lookForLeftovers(ctx); err != nil {
		return err
	}
	o.everyKindWatched.Store(true)
	return nil
}

// forgetUnserved drops what the caches of kinds stopped for a lasting
// error showed, and the ledger's creates of them, once the API no longer
// serves them (looked up again at most every 10 s while there are such
// kinds): a CRD's resources are deleted with it. An uninstalled kind whose
// role went too answers 403, not 404, and would otherwise hold its nodes
// for good.
func (o *Observer) forgetUnserved(ctx context.Context) {
	for _, gvr := range o.informers.Remembering() {
		if !o.templates.Served(ctx, gvr) {
			o.ledger.ForgetKind(gvr)
			o.informers.ForgetUnserved(gvr)
		}
	}
}
