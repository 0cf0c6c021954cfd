package remediation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
)

// fakeReviewer answers every SelfSubjectAccessReview alike, and keeps what
// it was asked.
type fakeReviewer struct {
	allowed bool
	err     error
	asked   []authorizationv1.ResourceAttributes
}

func (r *fakeReviewer) Create(_ context.Context, review *authorizationv1.SelfSubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error) {
	r.asked = append(r.asked, *review.Spec.ResourceAttributes)
	if r.err != nil {
		return nil, r.err
	}
	review.Status.Allowed = r.allowed
	return review, nil
}

// A 403 to a create is the role's only if the role does not allow the
// create: a remediator's webhook denying one node's resource (as
// controller-runtime's admission.Denied does, with a 403) refuses that
// create alone, and must not stop the kind and disable every
// NodeHealthCheck that uses it.
func TestA403FromAdmissionRefusesOneCreateAlone(t *testing.T) {
	denied := apierrors.NewForbidden(testGVR.GroupResource(), "worker-1",
		assert.AnError)
	for _, tt := range []struct {
		name     string
		reviewer *fakeReviewer
		refused  bool
	}{
		{"the role allows it: admission refused it", &fakeReviewer{allowed: true}, true},
		{"the role forbids it", &fakeReviewer{allowed: false}, false},
		{"no answer: the role's", &fakeReviewer{err: apierrors.NewInternalError(assert.AnError)}, false},
		{"no reviewer: the role's", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newWriteFixture(t)
			if tt.reviewer != nil {
				f.writer.access = tt.reviewer
			}
			// Before the informer starts: its reflector reads the reactors.
			f.client.PrependReactor("create", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, denied })
			f.observer.informers.Use("workers", kinds.Kinds{Remediations: []schema.GroupVersionResource{testGVR}})

			out := f.apply(testNHC, createPlan("worker-1"), f.watched)
			stopped := f.observer.informers.State(testGVR).Err != nil
			if tt.refused {
				require.Len(t, out.Blocked, 1, "a refusal of that create")
				assert.Contains(t, out.Blocked[0].Message, "refused by admission")
				assert.False(t, stopped, "the kind stays in use")
				assert.Empty(t, f.writer.ledger.Pending(testNHC.Name), "nothing was created")
			} else {
				require.Len(t, out.Errors, 1)
				assert.True(t, apierrors.IsForbidden(out.Errors[0]))
				assert.True(t, stopped, "the kind stops until access comes back")
			}
			if tt.reviewer != nil {
				assert.Equal(t, []authorizationv1.ResourceAttributes{{Namespace: "remediators", Verb: "create", Group: testGVR.Group, Version: testGVR.Version, Resource: testGVR.Resource}}, tt.reviewer.asked)
			}
		})
	}
}
