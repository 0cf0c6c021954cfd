package kinds

import (
	"encoding/json"
	"strconv"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// What the informers keep of an object: what the controller reads, no
// more, so that memory is a function of what it watches over (the
// remediation resources NodeHealthChecks own, the templates they name), not
// of what others store in the kinds it watches.

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
// annotation anyone else may set (keep drops the others).
const droppedTemplateAnnotation = "nhc-controller.internal/dropped-template"

// droppedUnnamed: no NodeHealthCheck named the template when it was
// cached, or only its metadata was kept.
const droppedUnnamed = "unnamed"

// keptAnnotations are the annotations the controller reads of remediation
// resources and templates.
var keptAnnotations = []string{
	v1alpha1.NodeNameAnnotation, v1alpha1.TemplateNameAnnotation, v1alpha1.TimedOutAnnotation,
	v1alpha1.HealthyDelayAnnotation, v1alpha1.OldRemediationAnnotation, v1alpha1.MultipleTemplatesSupportAnnotation,
}

// keptConditions are the status conditions the controller reads of
// remediation resources, by type.
var keptConditions = []string{v1alpha1.SucceededCondition, v1alpha1.PermanentNodeDeletionExpectedCondition}

// Keep reduces an object to what the controller reads. A template named
// keeps its spec.template, up to MaxTemplateBytes. An object that neither
// a NodeHealthCheck owns, nor remediates a control-plane node, nor is a
// named template, is kept as a metadata shell: its name, for the cache's
// key, and its UID.
func Keep(u *unstructured.Unstructured, named bool) any {
	owners := resource.OwnerRefs(u)
	_, controlPlane := u.GetLabels()[v1alpha1.ControlPlaneNodeLabel]
	if !named && len(owners) == 0 && !controlPlane {
		return shellOf(u)
	}
	kept := &unstructured.Unstructured{Object: map[string]any{}}
	kept.SetAPIVersion(u.GetAPIVersion())
	kept.SetKind(u.GetKind())
	kept.SetNamespace(u.GetNamespace())
	kept.SetName(u.GetName())
	kept.SetUID(u.GetUID())
	kept.SetResourceVersion(u.GetResourceVersion())
	kept.SetCreationTimestamp(u.GetCreationTimestamp())
	kept.SetDeletionTimestamp(u.GetDeletionTimestamp())
	if len(owners) > 0 {
		kept.SetOwnerReferences(owners[:min(len(owners), maxKeptOwners)])
	}
	if controlPlane {
		kept.SetLabels(map[string]string{v1alpha1.ControlPlaneNodeLabel: ""})
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
	annotations := keptAnnotationsOf(u)
	annotations[droppedTemplateAnnotation] = droppedUnnamed
	kept.SetAnnotations(annotations)
	return kept
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

// shell is what identifies an object and its version: the cache's key, and
// what a template named later is read again by. It is all an object none of
// ours costs, so it holds four strings and nothing else: a
// PartialObjectMetadata costs several times as much in the cache.
type shell struct {
	namespace, name, uid, resourceVersion string
}

// shellOf is an object's shell; the shells of a namespace share its name.
func shellOf(u *unstructured.Unstructured) *shell {
	return &shell{namespace: unique.Make(u.GetNamespace()).Value(), name: u.GetName(), uid: string(u.GetUID()), resourceVersion: u.GetResourceVersion()}
}

// GetObjectMeta gives the cache its key.
func (s *shell) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, UID: types.UID(s.uid), ResourceVersion: s.resourceVersion}
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

// unstructured is a shell as the Unstructured that Get returns.
func (s *shell) unstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(s.namespace)
	u.SetName(s.name)
	u.SetUID(types.UID(s.uid))
	u.SetResourceVersion(s.resourceVersion)
	u.SetAnnotations(map[string]string{droppedTemplateAnnotation: droppedUnnamed})
	return u
}
