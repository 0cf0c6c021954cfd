package apiserver

import (
	"encoding/json"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// selfSubjectAccessReviews is the resource a client asks whether its role
// allows a request with.
var selfSubjectAccessReviews = authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews")

// reviewAccess answers a SelfSubjectAccessReview: the role allows every
// request but those of the resources it lacks (Forbid).
func (s *Server) reviewAccess(body []byte) *http.Response {
	var review authorizationv1.SelfSubjectAccessReview
	if err := json.Unmarshal(body, &review); err != nil || review.Spec.ResourceAttributes == nil {
		return respondError(apierrors.NewBadRequest("a SelfSubjectAccessReview of resource attributes"))
	}
	a := review.Spec.ResourceAttributes
	review.Status.Allowed = !s.forbidden[schema.GroupVersionResource{Group: a.Group, Version: a.Version, Resource: a.Resource}]
	review.APIVersion, review.Kind = authorizationv1.SchemeGroupVersion.String(), "SelfSubjectAccessReview"
	return respond(http.StatusCreated, review)
}
