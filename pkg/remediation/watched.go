package remediation

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// Watched is what keeping a NodeHealthCheck's kinds watched found (Watch):
// its templates resolved to their kinds and read, the kinds of its
// remediation resources, and those of the resources the other
// NodeHealthChecks' statuses record. Read reads what the informers of
// these kinds show, without a request, and the Writer writes in them.
type Watched struct {
	// templates are the templates resolved, in the spec's order.
	templates []templates.Template
	// reads are what reading each of templates found.
	reads []templates.Read
	// problem is why a template reference cannot be used, if one cannot.
	problem *health.Problem
	// resources are the kinds of the remediation resources: those of its
	// templates, those its status lists, whose resources must still be
	// cleaned up after the spec dropped their template, those of its
	// creates under way, and those Read found its resources of elsewhere.
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
	// recorded are the kinds of the resources the other NodeHealthChecks'
	// statuses record, mapped as the mapper knows them: one it does not
	// know has no resources that could hold a node.
	recorded map[schema.GroupVersionKind]schema.GroupVersionResource
	// retryAfter is how soon a kind that is not served is looked up again.
	retryAfter time.Duration
}

// template returns a template as Watch read it, nil when it was not read.
func (w *Watched) template(ref corev1.ObjectReference) *unstructured.Unstructured {
	var obj *unstructured.Unstructured
	for i, tmpl := range w.templates {
		if bareTemplateRef(tmpl.Ref) == bareTemplateRef(ref) && w.reads[i].Obj != nil {
			obj = w.reads[i].Obj
		}
	}
	return obj
}

// resource returns the resource of a kind the NodeHealthCheck's
// remediation resources are of.
func (w *Watched) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	gvr, ok := w.resources[gvk]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("kind %s is not watched", gvk)
	}
	return gvr, nil
}

// bareTemplateRef identifies a template reference, whatever else it carries.
func bareTemplateRef(ref corev1.ObjectReference) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}
