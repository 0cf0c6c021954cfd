package remediation

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// Writer writes remediation resources, one write a call (writes.go), and
// books each in the ledger of writes under way (internal/inflight) that the
// Observer reads: a create books its node, and a control-plane node's the
// cluster's one control-plane slot, in one step before it is sent. It looks
// up at the API server what the caches did not show in time (lapsed.go),
// and tells the role's 403 from an admission's (access.go). It decides
// nothing: the controller orders the writes of a plan.
type Writer struct {
	informers writerCaches
	// templates tells whether a kind is still served (lapsed.go).
	templates *templates.Resolver
	ledger    *inflight.Ledger
	client    *resourceClient
	// access tells the role's 403 from an admission's (access.go); nil
	// counts every 403 as the role's.
	access AccessReviewer
}

// writerCaches is what the Writer asks of the informers: whether a write
// shows in its cache, whether another NodeHealthCheck remediates a node,
// and that a kind's writes are forbidden.
type writerCaches interface {
	Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured
	OtherOwner(node string, except types.UID) string
	Forbidden(gvr schema.GroupVersionResource, err error)
}

// AccessReviewer asks the API server whether the controller's role allows
// a request: a SelfSubjectAccessReview, which every authenticated user may
// make (system:basic-user).
type AccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}
