package resource

import (
	"encoding/json"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// What the informers keep of a remediation resource or a template: what
// this package's readers read, no more, so that memory is a function of
// what the controller watches over (the remediation resources
// NodeHealthChecks own, the templates they name), not of what others store
// in the kinds it watches. The readers and these lists live together: a
// reader that gains a field the lists lack fails kept_test.go.

// MaxTemplateBytes is the most a template's spec.template may hold, as
// JSON: a remediation resource is made from it for each node, so its size
// multiplies. A template over it is not kept, and its NodeHealthChecks
// report it.
const MaxTemplateBytes = 128 << 10

// maxKeptValue is the longest annotation value kept: a node name, a
// template name and a time are far shorter; a longer value is none of ours.
const maxKeptValue = 512

// maxKeptOwners is the most NodeHealthCheck owner references kept of one
// object: a remediation resource has one.
const maxKeptOwners = 8

// droppedTemplateAnnotation marks a kept object whose spec.template was
// not kept: droppedUnnamed, or its size in bytes when it was over
// MaxTemplateBytes. The kept objects are never written back, and it is no
// annotation anyone else may set (Keep drops the others).
const droppedTemplateAnnotation = "nhc-controller.internal/dropped-template"

// droppedUnnamed: no NodeHealthCheck named the template when it was
// cached, or only its metadata was kept.
const droppedUnnamed = "unnamed"

// keptAnnotations are the annotations the readers read.
var keptAnnotations = []string{
	v1alpha1.NodeNameAnnotation, v1alpha1.TemplateNameAnnotation, v1alpha1.TimedOutAnnotation,
	v1alpha1.HealthyDelayAnnotation, v1alpha1.OldRemediationAnnotation, v1alpha1.MultipleTemplatesSupportAnnotation,
}

// keptLabels are the labels the readers read.
var keptLabels = []string{v1alpha1.ControlPlaneNodeLabel}

// keptConditions are the status conditions the readers read, by type.
var keptConditions = []string{v1alpha1.SucceededCondition, v1alpha1.PermanentNodeDeletionExpectedCondition}

// Ours tells whether an object is one the controller reads beyond its
// identity, whatever names it: a NodeHealthCheck owns it, or it remediates
// a control-plane node.
func Ours(u *unstructured.Unstructured) bool {
	return len(OwnerRefs(u)) > 0 || ForControlPlaneNode(u)
}

// Keep reduces an object to what the readers read. A template named keeps
// its spec.template, up to MaxTemplateBytes; any other says that its
// spec.template was not kept (TemplateKept).
func Keep(u *unstructured.Unstructured, named bool) *unstructured.Unstructured {
	kept := &unstructured.Unstructured{Object: map[string]any{}}
	kept.SetAPIVersion(u.GetAPIVersion())
	kept.SetKind(u.GetKind())
	kept.SetNamespace(u.GetNamespace())
	kept.SetName(u.GetName())
	kept.SetUID(u.GetUID())
	kept.SetResourceVersion(u.GetResourceVersion())
	kept.SetCreationTimestamp(u.GetCreationTimestamp())
	kept.SetDeletionTimestamp(u.GetDeletionTimestamp())
	if owners := OwnerRefs(u); len(owners) > 0 {
		kept.SetOwnerReferences(owners[:min(len(owners), maxKeptOwners)])
	}
	if labels := keptLabelsOf(u); len(labels) > 0 {
		kept.SetLabels(labels)
	}
	annotations := keptAnnotationsOf(u)
	if conditions := keptStatus(u); len(conditions) > 0 {
		kept.Object["status"] = map[string]any{"conditions": conditions}
	}
	template, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template")
	if dropped, ok := u.GetAnnotations()[droppedTemplateAnnotation]; ok && !found {
		// Kept already: what was dropped stays said.
		annotations[droppedTemplateAnnotation] = dropped
	}
	switch {
	case !found:
	case !named:
		annotations[droppedTemplateAnnotation] = droppedUnnamed
	default:
		if size := encodedSize(template); size > MaxTemplateBytes {
			annotations[droppedTemplateAnnotation] = strconv.Itoa(size)
		} else {
			kept.Object["spec"] = map[string]any{"template": template}
		}
	}
	if len(annotations) > 0 {
		kept.SetAnnotations(annotations)
	}
	return kept
}

// KeepMetadata reduces a named template of a kind watched for its
// templates alone, which its informer lists and watches as metadata: it
// keeps what identifies its version, its annotations read, and its kind
// (gvk; the metadata has none), so that its change reaches the
// NodeHealthChecks that name it; its spec.template is read with GET.
func KeepMetadata(u *unstructured.Unstructured, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	kept := &unstructured.Unstructured{Object: map[string]any{}}
	kept.SetGroupVersionKind(gvk)
	kept.SetNamespace(u.GetNamespace())
	kept.SetName(u.GetName())
	kept.SetUID(u.GetUID())
	kept.SetResourceVersion(u.GetResourceVersion())
	kept.SetAnnotations(keptAnnotationsOf(u))
	MarkTemplateNotKept(kept)
	return kept
}

// MarkTemplateNotKept says of an object that its spec.template was not
// kept, and must be read with GET before it is used.
func MarkTemplateNotKept(u *unstructured.Unstructured) {
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[droppedTemplateAnnotation] = droppedUnnamed
	u.SetAnnotations(annotations)
}

// keptAnnotationsOf are the annotations read of an object, but a value
// too long to be one of ours.
func keptAnnotationsOf(u *unstructured.Unstructured) map[string]string {
	annotations := map[string]string{}
	for _, key := range keptAnnotations {
		if value, ok := u.GetAnnotations()[key]; ok && len(value) <= maxKeptValue {
			annotations[key] = value
		}
	}
	return annotations
}

// keptLabelsOf are the labels read of an object, but a value too long to
// be one of ours.
func keptLabelsOf(u *unstructured.Unstructured) map[string]string {
	labels := map[string]string{}
	for _, key := range keptLabels {
		if value, ok := u.GetLabels()[key]; ok && len(value) <= maxKeptValue {
			labels[key] = value
		}
	}
	return labels
}

// keptStatus is the type and status of the conditions read.
func keptStatus(u *unstructured.Unstructured) []any {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var kept []any
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if !ok {
			continue
		}
		for _, t := range keptConditions {
			if condition["type"] == t {
				status, _ := condition["status"].(string)
				kept = append(kept, map[string]any{"type": t, "status": status})
			}
		}
	}
	return kept
}

// encodedSize is the size of a value as JSON.
func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return MaxTemplateBytes + 1
	}
	return len(b)
}
