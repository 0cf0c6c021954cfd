package kinds

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// The templates NodeHealthChecks name: their caches keep them whole, and a
// kind used for templates alone is watched for its metadata.

// TemplateRef names a template a NodeHealthCheck uses.
type TemplateRef struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
}

// NamedTemplate is a template a NodeHealthCheck names, and its kind.
type NamedTemplate struct {
	Ref  TemplateRef
	Kind string
}

// renameTemplates sets the templates named from every NodeHealthCheck's
// use; mu is held.
func (inf *Informers) renameTemplates() {
	named := map[TemplateRef]string{}
	for _, u := range inf.uses {
		for _, t := range u.named {
			named[t.Ref] = t.Kind
		}
	}
	inf.named.Lock()
	defer inf.named.Unlock()
	inf.named.kinds = named
}

// namedKind is the kind of a template some NodeHealthCheck names, "" for
// one no NodeHealthCheck names.
func (v View) namedKind(ref TemplateRef) string {
	v.named.RLock()
	defer v.named.RUnlock()
	return v.named.kinds[ref]
}

// templatesOnly tells whether a kind is used for templates and for nothing
// else: its informer needs metadata alone. A kind no NodeHealthCheck uses
// is started for the remediation resources it may hold. mu is held.
func (v View) templatesOnly(gvr schema.GroupVersionResource) bool {
	forTemplates := false
	for _, u := range v.uses {
		if u.remediations.Has(gvr) {
			return false
		}
		forTemplates = forTemplates || u.templates.Has(gvr)
	}
	return forTemplates
}

// keeper is the transform of a kind's informer: what others store in the
// kind costs its shell at most, and a template named is kept (whole, or as
// its metadata when the informer watches metadata alone).
func (inf *Informers) keeper(gvr schema.GroupVersionResource, metadataOnly bool) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		kind := inf.namedKind(TemplateRef{Resource: gvr, Namespace: u.GetNamespace(), Name: u.GetName()})
		switch {
		case !metadataOnly:
			return Keep(u, kind != ""), nil
		case kind == "":
			return shellOf(u), nil
		default:
			return resource.KeepMetadata(u, gvr.GroupVersion().WithKind(kind)), nil
		}
	}
}
