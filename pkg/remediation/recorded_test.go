package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// After a restart, a kind forbidden from the start shows nothing; what the
// statuses of its NodeHealthChecks record of it holds their nodes instead.
// A kind that can be read is its cache's to tell: the statuses are not
// asked.
func TestTheStatusRecordsTheRemediationsOfAKindThatCannotBeRead(t *testing.T) {
	recorded := testNHC.DeepCopy()
	recorded.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{
		{Name: "cp-0", Remediations: []*v1alpha1.Remediation{{Resource: corev1.ObjectReference{APIVersion: testGVR.GroupVersion().String(), Kind: "TestRemediation", Name: "cp-0"}}}},
		{Name: "worker-0"},
	}
	for _, tt := range []struct {
		name      string
		forbidden bool
		want      map[string][]Owner
	}{
		{"forbidden", true, map[string][]Owner{"cp-0": {{Name: recorded.Name, UID: recorded.UID}}}},
		{"readable", false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
			client := fakeDynamic()
			forbidden := apierrors.NewForbidden(testGVR.GroupResource(), "", assert.AnError)
			client.PrependReactor("list", testGVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return tt.forbidden, nil, forbidden
			})
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(testGVR.GroupVersion().WithKind("TestRemediation"), meta.RESTScopeNamespace)
			informers := NewInformers(ctx, client, clock)
			m := newManager(informers, NewTemplates(resettable{mapper}, informers, clock), NewExpectations(clock), NewWriter(client, kubefake.NewClientset()), nil)
			assert.Equal(t, map[string][]Owner{"cp-0": {{Name: recorded.Name, UID: recorded.UID}}}, m.Recorded([]*v1alpha1.NodeHealthCheck{recorded}), "not watched yet")

			informers.Use(recorded.Name, Kinds{Remediations: []schema.GroupVersionResource{testGVR}})
			if tt.forbidden {
				clock.SetTime(clock.Now().Add(watchGrace))
				informers.failed(testGVR, informers.informer(testGVR), forbidden)
			} else {
				require.Eventually(t, func() bool { return informers.State(testGVR).Synced }, 10*time.Second, 10*time.Millisecond)
			}
			assert.Equal(t, tt.want, m.Recorded([]*v1alpha1.NodeHealthCheck{recorded}))
		})
	}
}
