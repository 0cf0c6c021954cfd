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
	if node := r.GetAnnotations()[v1alpha1.NodeNameAnnotation]; node != "" {
		return node
	}
	return r.GetName()
}

// OwnerUIDs returns the UIDs of the NodeHealthChecks that own a resource.
func OwnerUIDs(r *unstructured.Unstructured) []types.UID {
	var uids []types.UID
	for _, ref := range OwnerRefs(r) {
		uids = append(uids, ref.UID)
	}
	return uids
}

// OwnerRefs returns the references to the NodeHealthChecks that own a
// resource.
func OwnerRefs(r *unstructured.Unstructured) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, ref := range r.GetOwnerReferences() {
		if isNHCOwner(ref) {
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
	for _, ref := range OwnerRefs(r) {
		owners = append(owners, Owner{Name: ref.Name, UID: ref.UID})
	}
	return owners
}

// OwnerNames returns the names of the NodeHealthChecks that own a resource.
func OwnerNames(r *unstructured.Unstructured) []string {
	var names []string
	for _, ref := range OwnerRefs(r) {
		names = append(names, ref.Name)
	}
	return names
}

func isNHCOwner(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && ref.Kind == "NodeHealthCheck" && gv.Group == remediation.GroupName
}

// OwnedBy tells whether a resource belongs to a NodeHealthCheck. The UID
// decides: a NodeHealthCheck recreated under the same name does not adopt
// its predecessor's resources (upstream compares names only).
func OwnedBy(r *unstructured.Unstructured, nhc *v1alpha1.NodeHealthCheck) bool {
	for _, uid := range OwnerUIDs(r) {
		if uid == nhc.UID {
			return true
		}
	}
	return false
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
	annotations := r.GetAnnotations()
	_, flaggedOld := annotations[v1alpha1.OldRemediationAnnotation]
	created := r.GetCreationTimestamp().Time
	s := health.Remediation{
		Ref:               Reference(r),
		TemplateName:      annotations[v1alpha1.TemplateNameAnnotation],
		Created:           created,
		Deleting:          r.GetDeletionTimestamp() != nil,
		HealthyDelayStart: annotationTime(annotations, v1alpha1.HealthyDelayAnnotation, time.Time{}),
		FlaggedOld:        flaggedOld,
		ControlPlane:      ForControlPlaneNode(r),
	}
	// A time-out annotation that does not parse still says the resource timed out.
	s.TimedOut = annotationTime(annotations, v1alpha1.TimedOutAnnotation, created)
	conditions, _, _ := unstructured.NestedSlice(r.Object, "status", "conditions")
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
func annotationTime(annotations map[string]string, key string, ifInvalid time.Time) time.Time {
	value, ok := annotations[key]
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
	_, ok := r.GetLabels()[v1alpha1.ControlPlaneNodeLabel]
	return ok
}
