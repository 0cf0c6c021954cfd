package resource

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// TemplateSpec returns a deep copy of a template's spec.template.spec, which
// every remediation template must have (it may be empty).
func TemplateSpec(template *unstructured.Unstructured) (map[string]any, error) {
	spec, found, err := unstructured.NestedFieldNoCopy(template.Object, "spec", "template", "spec")
	if err != nil || !found {
		return nil, fmt.Errorf("it has no spec.template.spec")
	}
	switch s := spec.(type) {
	case map[string]any:
		return runtime.DeepCopyJSON(s), nil
	case nil:
		return map[string]any{}, nil
	default:
		return nil, fmt.Errorf("its spec.template.spec is a %T, not an object", spec)
	}
}

// SupportsMultipleTemplates tells whether a template's remediator accepts
// several remediation resources per node.
func SupportsMultipleTemplates(template *unstructured.Unstructured) bool {
	_, ok := template.GetAnnotations()[v1alpha1.MultipleTemplatesSupportAnnotation]
	return ok
}

// TemplateState says what a cache kept of an object's spec.template.
type TemplateState int

const (
	// TemplateKept: spec.template is as the API server has it, or it has
	// none.
	TemplateKept TemplateState = iota
	// TemplateNotKept: its cache keeps metadata alone, or it was cached
	// before a NodeHealthCheck named it; it must be read with GET.
	TemplateNotKept
	// TemplateTooLarge: spec.template is over MaxTemplateBytes.
	TemplateTooLarge
)

// KeptTemplate says what was kept of an object's spec.template and, when
// it was too large, its size.
func KeptTemplate(u *unstructured.Unstructured) (TemplateState, int) {
	dropped, ok := u.GetAnnotations()[droppedTemplateAnnotation]
	switch {
	case !ok:
		return TemplateKept, 0
	case dropped == droppedUnnamed:
		return TemplateNotKept, 0
	}
	size, _ := strconv.Atoi(dropped)
	return TemplateTooLarge, size
}
