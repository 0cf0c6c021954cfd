package remediation

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// logAdmissionRefused is logged at level 2 when a 403 to a write came from
// admission, not from the controller's role.
const logAdmissionRefused = "Write of a remediation resource refused by admission; its kind stays in use"

// checkAccess tells a write that the controller's role forbids from one
// that admission refused, both answered 403: a remediator's webhook
// denying the object (controller-runtime's admission.Denied is a 403), an
// exceeded quota, a namespace being deleted. Only the role's stops the
// kind's informer and disables every NodeHealthCheck that uses it, with
// the error, which names the verb, until access comes back; an admission
// refusal concerns that object alone, and is returned as a refusal
// (deniedError). Whether the role allows the write is asked at the API
// server; with no answer, the 403 counts as the role's.
func (w *Writer) checkAccess(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string, err error) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	if w.roleAllows(ctx, verb, gvr, namespace) {
		klog.FromContext(ctx).V(2).Info(logAdmissionRefused, "resource", gvr, "namespace", namespace, "verb", verb, "err", err)
		return &deniedError{err: err}
	}
	w.informers.Forbidden(gvr, err)
	return err
}

// roleAllows tells whether the controller's role allows a write, false
// when it cannot be told.
func (w *Writer) roleAllows(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string) bool {
	if w.access == nil {
		return false
	}
	review, err := w.access.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
	}}, metav1.CreateOptions{})
	return err == nil && review.Status.Allowed
}

// deniedError is a write that admission refused, which the role allows.
type deniedError struct {
	err error
}

func (e *deniedError) Error() string {
	return fmt.Sprintf("%v (refused by admission: the controller's role allows it)", e.err)
}

func (e *deniedError) Unwrap() error { return e.err }
