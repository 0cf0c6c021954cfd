// Package templates reads remediation templates: a reference resolved to
// the resources of its kind and of its remediation kind, the template read
// from an informer's cache or with GET, and checked as the controller
// reports it. It starts no informer: kubectl nhc reads templates with GET
// alone.
package templates

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Why a template cannot be used: ours, with upstream's words after them
// ("failed to get ...", "no namespace is provided"), which tools that read
// upstream's status.reason look for.
const (
	// messageKindNotServed (kind, apiVersion, kind, version).
	messageKindNotServed = "Remediation template kind %s of %s is not served by the API server: is its remediator installed? (failed to get restmapping: no matches for kind %q in version %q)"
	// messageRemediationKindNotServed (kind, apiVersion, template kind, kind, version).
	messageRemediationKindNotServed = "Remediation kind %s of %s, which template kind %s creates, is not served by the API server: is its remediator installed? (failed to get restmapping: no matches for kind %q in version %q)"
	// messageNoNamespace (kind, name).
	messageNoNamespace = "Remediation template %s %q is namespaced, but no namespace is provided"
	// messageTemplateTooLarge (size, limit): a remediation resource is made
	// of it for each node, so the controller neither keeps nor uses it.
	messageTemplateTooLarge = "its spec.template is %d bytes as JSON, more than the %d a template may have"
	// messageTemplateNotFound (kind, template, template).
	messageTemplateNotFound = "Remediation template %s %s not found: failed to get external remediation template %s"
)

// MapperResetInterval throttles rediscovery of the API when a template kind
// is unknown: a CRD installed later is noticed within this time.
const MapperResetInterval = 10 * time.Second

// Resolver resolves template references to resources and reads templates
// from the informers' caches, or with GET where their kind may not be
// watched (read.go).
type Resolver struct {
	mapper KindMapper
	caches Caches
	// client reads with GET the templates the informers cannot show.
	client dynamic.Interface
	clock  clock.PassiveClock

	mu        sync.Mutex
	lastReset time.Time
	// fetched holds the templates read with GET.
	fetched map[templateID]fetchedTemplate
}

// templateID identifies a template read with GET.
type templateID struct {
	resource        schema.GroupVersionResource
	namespace, name string
}

// fetchedTemplate is a template read with GET; obj is nil when it was not
// found.
type fetchedTemplate struct {
	obj  *unstructured.Unstructured
	read time.Time
}

// KindMapper maps kinds to resources and back; Reset makes it read the API
// server again (served.Kinds; a meta.ResettableRESTMapper).
type KindMapper interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
	KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error)
	Reset()
}

// Caches is what the resolver asks of the informers: whether a kind's
// cache can be read, and a template in it.
type Caches interface {
	CacheState(gvr schema.GroupVersionResource) CacheState
	Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured
}

// CacheState is whether a kind's cache can be read.
type CacheState struct {
	// Synced is true when the cache holds what the API server has.
	Synced bool
	// Err is why the kind cannot be read, when it cannot.
	Err error
}

// NewResolver returns a resolver that reads templates from caches (nil:
// with GET alone). A reset of the mapper should read the API again.
func NewResolver(mapper KindMapper, caches Caches, client dynamic.Interface, clock clock.PassiveClock) *Resolver {
	return &Resolver{mapper: mapper, caches: caches, client: client, clock: clock, fetched: map[templateID]fetchedTemplate{}}
}

// Template is a template reference resolved to its resources.
type Template struct {
	// Ref is the reference as the spec has it.
	Ref corev1.ObjectReference
	// Resource is the resource of the template's kind.
	Resource schema.GroupVersionResource
	// Remediation is the resource of the remediation kind.
	Remediation schema.GroupVersionResource
	// Namespace is the template's namespace, "" for a cluster-scoped kind.
	Namespace string
}

// Resolve maps a template reference to the resources of the template kind
// and of its remediation kind. A problem disables the NodeHealthCheck; an
// error (discovery failed) is worth a retry.
func (t *Resolver) Resolve(ctx context.Context, ref corev1.ObjectReference) (Template, *health.Problem, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Template{}, templateInvalid(ref, fmt.Sprintf("its apiVersion %q is malformed", ref.APIVersion)), nil
	}
	templateMapping, err := t.mapping(ctx, gv.WithKind(ref.Kind))
	if meta.IsNoMatchError(err) {
		return Template{}, NotFound(fmt.Sprintf(messageKindNotServed, ref.Kind, ref.APIVersion, ref.Kind, gv.Version)), nil
	}
	if err != nil {
		return Template{}, nil, fmt.Errorf("mapping %s %s: %w", ref.APIVersion, ref.Kind, err)
	}
	remediationKind := health.RemediationKind(ref.Kind)
	remediationMapping, err := t.mapping(ctx, gv.WithKind(remediationKind))
	if meta.IsNoMatchError(err) {
		return Template{}, NotFound(fmt.Sprintf(messageRemediationKindNotServed, remediationKind, ref.APIVersion, ref.Kind, remediationKind, gv.Version)), nil
	}
	if err != nil {
		return Template{}, nil, fmt.Errorf("mapping %s %s: %w", ref.APIVersion, remediationKind, err)
	}
	namespaced := templateMapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced != (remediationMapping.Scope.Name() == meta.RESTScopeNameNamespace) {
		return Template{}, templateInvalid(ref, fmt.Sprintf("kinds %s and %s differ in scope: one is namespaced, the other is not", ref.Kind, remediationKind)), nil
	}
	resolved := Template{Ref: ref, Resource: templateMapping.Resource, Remediation: remediationMapping.Resource}
	if namespaced {
		if ref.Namespace == "" {
			return Template{}, NotFound(fmt.Sprintf(messageNoNamespace, ref.Kind, ref.Name)), nil
		}
		resolved.Namespace = ref.Namespace
	}
	return resolved, nil, nil
}

// mapping maps a kind to its resource; an unknown kind rediscovers the API
// once, throttled, so that a CRD installed after the NodeHealthCheck is found.
func (t *Resolver) mapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := t.restMapping(ctx, gvk)
	if meta.IsNoMatchError(err) && t.mayReset() {
		t.mapper.Reset()
		m, err = t.restMapping(ctx, gvk)
	}
	return m, err
}

// contextMapper is a KindMapper whose reads a context bounds
// (served.Kinds); a mapper that is not reads nothing, or bounds its reads
// itself.
type contextMapper interface {
	MappingContext(ctx context.Context, gk schema.GroupKind, version string) (*meta.RESTMapping, error)
	KindForContext(ctx context.Context, gvr schema.GroupVersionResource) (schema.GroupVersionKind, error)
}

func (t *Resolver) restMapping(ctx context.Context, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if m, ok := t.mapper.(contextMapper); ok {
		return m.MappingContext(ctx, gvk.GroupKind(), gvk.Version)
	}
	return t.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func (t *Resolver) kindFor(ctx context.Context, gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if m, ok := t.mapper.(contextMapper); ok {
		return m.KindForContext(ctx, gvr)
	}
	return t.mapper.KindFor(gvr)
}

// Rediscover makes the next mapping read the API again, throttled: a kind
// that left the API server is noticed.
func (t *Resolver) Rediscover() {
	if t.mayReset() {
		t.mapper.Reset()
	}
}

// ResourceOf maps a kind to its resource, as the mapper knows it now.
func (t *Resolver) ResourceOf(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := t.restMapping(ctx, gvk)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// KindOf maps a resource to its kind, as the mapper knows it now.
func (t *Resolver) KindOf(ctx context.Context, gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return t.kindFor(ctx, gvr)
}

// Served tells whether the API still serves a kind, looking it up again
// (at most every 10 s) first; an answer other than "no such kind" counts
// as served. Without a resolver, every kind counts as served.
func (t *Resolver) Served(ctx context.Context, gvr schema.GroupVersionResource) bool {
	if t == nil {
		return true
	}
	t.Rediscover()
	_, err := t.kindFor(ctx, gvr)
	return !meta.IsNoMatchError(err)
}

func (t *Resolver) mayReset() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	if now.Sub(t.lastReset) < MapperResetInterval {
		return false
	}
	t.lastReset = now
	return true
}

// checkTemplate says why a template that was read cannot be used: it does
// not exist (obj is nil), its spec.template is too large to keep, or it has
// no spec.template.spec.
func checkTemplate(tmpl Template, obj *unstructured.Unstructured) *health.Problem {
	if obj == nil {
		return NotFound(fmt.Sprintf(messageTemplateNotFound, tmpl.Ref.Kind, describe(tmpl), describe(tmpl)))
	}
	if kept, size := resource.KeptTemplate(obj); kept == resource.TemplateTooLarge {
		return templateInvalid(tmpl.Ref, fmt.Sprintf(messageTemplateTooLarge, size, resource.MaxTemplateBytes))
	}
	if _, err := resource.TemplateSpec(obj); err != nil {
		return templateInvalid(tmpl.Ref, err.Error())
	}
	return nil
}

// CheckKinds checks that escalation steps sharing a remediation kind use
// templates whose remediator accepts several resources per node: else the
// resources, named after the node, would collide.
func CheckKinds(templates []*unstructured.Unstructured) *health.Problem {
	byKind := map[schema.GroupKind]*unstructured.Unstructured{}
	for _, tmpl := range templates {
		kind := tmpl.GroupVersionKind().GroupKind()
		if other, ok := byKind[kind]; ok {
			for _, t := range []*unstructured.Unstructured{other, tmpl} {
				if !resource.SupportsMultipleTemplates(t) {
					return &health.Problem{Reason: v1alpha1.ReasonTemplateInvalid, Message: fmt.Sprintf(
						"Remediation templates %s and %s are both of kind %s, but %s lacks the %s annotation: its remediator does not support several remediations of one node",
						other.GetName(), tmpl.GetName(), kind.Kind, t.GetName(), v1alpha1.MultipleTemplatesSupportAnnotation)}
				}
			}
		}
		byKind[kind] = tmpl
	}
	return nil
}

// CheckDistinct refuses two steps that name one template, compared once
// their references are resolved: a cluster-scoped template has no
// namespace, whatever namespace a reference to it carries, nor does one
// object have two identities for two versions of its kind.
func CheckDistinct(templates []Template) *health.Problem {
	type object struct {
		resource        schema.GroupResource
		namespace, name string
	}
	seen := map[object]bool{}
	for _, t := range templates {
		o := object{resource: t.Resource.GroupResource(), namespace: t.Namespace, name: t.Ref.Name}
		if seen[o] {
			return health.TemplateTwice(t.Ref.Kind, describe(t))
		}
		seen[o] = true
	}
	return nil
}

func describe(tmpl Template) string {
	if tmpl.Namespace == "" {
		return tmpl.Ref.Name
	}
	return tmpl.Namespace + "/" + tmpl.Ref.Name
}

// NotFound is a problem that disables a NodeHealthCheck for something it
// needs that the API server does not have, or will not show.
func NotFound(message string) *health.Problem {
	return &health.Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: message}
}

func templateInvalid(ref corev1.ObjectReference, what string) *health.Problem {
	name := ref.Name
	if ref.Namespace != "" {
		name = ref.Namespace + "/" + ref.Name
	}
	return &health.Problem{Reason: v1alpha1.ReasonTemplateInvalid, Message: fmt.Sprintf("Remediation template %s %s is invalid: %s", ref.Kind, name, what)}
}
