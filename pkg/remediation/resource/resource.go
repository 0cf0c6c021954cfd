// Package resource is the one definition of what the controller reads of
// a remediation resource of any kind (its node, its NodeHealthCheck owners,
// whether it is a control-plane node's, its state as decisions read it) and
// of a template (its spec.template.spec, whether it supports several
// resources a node), and of what its caches keep of them: Keep keeps
// exactly what these readers read.
package resource

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// TargetNode returns the node a remediation resource remediates: its node-name
// annotation, or, for resources of older controllers, its name.
func TargetNode(r *unstructured.Unstructured) string {
	if node, _ := annotation(r, v1alpha1.NodeNameAnnotation); node != "" {
		return node
	}
	return r.GetName()
}

// The readers below read an object's metadata in place: its getters copy
// the annotations, the labels and the owner references on every call, and
// each sync reads every resource of its NodeHealthCheck. They read what
// the API server stores (string values, references as objects) as the
// getters do.

// metadata is an object's metadata as stored.
func metadata(r *unstructured.Unstructured) map[string]any {
	m, _ := r.Object["metadata"].(map[string]any)
	return m
}

// annotation reads one annotation; a null value reads as "", as the
// object's getter has it.
func annotation(r *unstructured.Unstructured, key string) (string, bool) {
	annotations, _ := metadata(r)["annotations"].(map[string]any)
	value, ok := annotations[key]
	s, _ := value.(string)
	return s, ok
}

// hasLabel tells whether an object carries a label.
func hasLabel(r *unstructured.Unstructured, key string) bool {
	labels, _ := metadata(r)["labels"].(map[string]any)
	_, ok := labels[key]
	return ok
}

// EachOwner calls add with each NodeHealthCheck that owns a resource,
// until add returns false.
func EachOwner(r *unstructured.Unstructured, add func(Owner) bool) {
	refs, _ := metadata(r)["ownerReferences"].([]any)
	for _, item := range refs {
		ref, _ := item.(map[string]any)
		apiVersion, _ := ref["apiVersion"].(string)
		kind, _ := ref["kind"].(string)
		if !isNHCOwner(apiVersion, kind) {
			continue
		}
		name, _ := ref["name"].(string)
		uid, _ := ref["uid"].(string)
		if !add(Owner{Name: name, UID: types.UID(uid)}) {
			return
		}
	}
}

// OwnerUIDs returns the UIDs of the NodeHealthChecks that own a resource.
func OwnerUIDs(r *unstructured.Unstructured) []types.UID {
	var uids []types.UID
	EachOwner(r, func(o Owner) bool { uids = append(uids, o.UID); return true })
	return uids
}

// OwnerRefs returns the references to the NodeHealthChecks that own a
// resource, whole.
func OwnerRefs(r *unstructured.Unstructured) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, ref := range r.GetOwnerReferences() {
		if isNHCOwner(ref.APIVersion, ref.Kind) {
			refs = append(refs, ref)
		}
	}
	return refs
}

// Owner is a NodeHealthCheck that owns a remediation resource.
type Owner struct {
	Name string
	UID  types.UID
}

// Owners returns the NodeHealthChecks that own a resource.
func Owners(r *unstructured.Unstructured) []Owner {
	var owners []Owner
	EachOwner(r, func(o Owner) bool { owners = append(owners, o); return true })
	return owners
}

// OwnerNames returns the names of the NodeHealthChecks that own a resource.
func OwnerNames(r *unstructured.Unstructured) []string {
	var names []string
	EachOwner(r, func(o Owner) bool { names = append(names, o.Name); return true })
	return names
}

func isNHCOwner(apiVersion, kind string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && kind == "NodeHealthCheck" && gv.Group == remediation.GroupName
}

// OwnedBy tells whether a resource belongs to a NodeHealthCheck. The UID
// decides: a NodeHealthCheck recreated under the same name does not adopt
// its predecessor's resources (upstream compares names only).
func OwnedBy(r *unstructured.Unstructured, nhc *v1alpha1.NodeHealthCheck) bool {
	owned := false
	EachOwner(r, func(o Owner) bool { owned = o.UID == nhc.UID; return !owned })
	return owned
}

// Reference returns a reference to a resource, with its UID.
func Reference(r *unstructured.Unstructured) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: r.GetAPIVersion(), Kind: r.GetKind(),
		Namespace: r.GetNamespace(), Name: r.GetName(), UID: r.GetUID(),
	}
}

// Summarize reads what the health evaluation needs from a remediation resource.
func Summarize(r *unstructured.Unstructured) health.Remediation {
	_, flaggedOld := annotation(r, v1alpha1.OldRemediationAnnotation)
	templateName, _ := annotation(r, v1alpha1.TemplateNameAnnotation)
	created := r.GetCreationTimestamp().Time
	s := health.Remediation{
		Ref:               Reference(r),
		TemplateName:      templateName,
		Created:           created,
		Deleting:          r.GetDeletionTimestamp() != nil,
		HealthyDelayStart: annotationTime(r, v1alpha1.HealthyDelayAnnotation, time.Time{}),
		FlaggedOld:        flaggedOld,
		ControlPlane:      ForControlPlaneNode(r),
	}
	// A time-out annotation that does not parse still says the resource timed out.
	s.TimedOut = annotationTime(r, v1alpha1.TimedOutAnnotation, created)
	status, _ := r.Object["status"].(map[string]any)
	conditions, _ := status["conditions"].([]any)
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if !ok {
			continue
		}
		status, _ := condition["status"].(string)
		switch condition["type"] {
		case v1alpha1.SucceededCondition:
			s.Succeeded = metav1.ConditionStatus(status)
		case v1alpha1.PermanentNodeDeletionExpectedCondition:
			s.PermanentNodeDeletionExpected = status == string(metav1.ConditionTrue)
		}
	}
	return s
}

// annotationTime parses an RFC 3339 annotation: zero when absent, ifInvalid
// when it does not parse.
func annotationTime(r *unstructured.Unstructured, key string, ifInvalid time.Time) time.Time {
	value, ok := annotation(r, key)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return ifInvalid
	}
	return t
}

// ForControlPlaneNode tells whether a remediation resource remediates a
// control-plane node: it carries the control-plane label, which the
// controller sets when it creates it for one.
func ForControlPlaneNode(r *unstructured.Unstructured) bool {
	return hasLabel(r, v1alpha1.ControlPlaneNodeLabel)
}
