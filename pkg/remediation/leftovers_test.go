package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/kinds"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

func TestRemediationKindsAreThoseServedBesideTheirTemplate(t *testing.T) {
	all := metav1.Verbs{"get", "list", "watch", "create", "delete"}
	for _, tt := range []struct {
		name  string
		lists []*metav1.APIResourceList
		want  []schema.GroupVersionResource
	}{
		{"a kind and its template", []*metav1.APIResourceList{{GroupVersion: "test.medik8s.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "testremediations", Kind: "TestRemediation", Verbs: all},
			{Name: "testremediations/status", Kind: "TestRemediation", Verbs: all},
			{Name: "testremediationtemplates", Kind: "TestRemediationTemplate", Verbs: all},
		}}}, []schema.GroupVersionResource{testGVR}},
		{"no template", []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Verbs: all},
		}}}, nil},
		{"Kubernetes' own", []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Verbs: all}, {Name: "podtemplates", Kind: "PodTemplate", Verbs: all}}},
			{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "resourceclaims", Kind: "ResourceClaim", Verbs: all}, {Name: "resourceclaimtemplates", Kind: "ResourceClaimTemplate", Verbs: all}}},
		}, nil},
		{"Cluster API's", []*metav1.APIResourceList{{GroupVersion: "infrastructure.cluster.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "metal3remediations", Kind: "Metal3Remediation", Verbs: all},
			{Name: "metal3remediationtemplates", Kind: "Metal3RemediationTemplate", Verbs: all},
		}}}, []schema.GroupVersionResource{{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "metal3remediations"}}},
		{"the template in another group version", []*metav1.APIResourceList{
			{GroupVersion: "a.example/v1", APIResources: []metav1.APIResource{{Name: "fences", Kind: "Fence", Verbs: all}}},
			{GroupVersion: "b.example/v1", APIResources: []metav1.APIResource{{Name: "fencetemplates", Kind: "FenceTemplate", Verbs: all}}},
		}, nil},
		{"cannot be watched", []*metav1.APIResourceList{{GroupVersion: "test.medik8s.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "testremediations", Kind: "TestRemediation", Verbs: metav1.Verbs{"get", "list"}},
			{Name: "testremediationtemplates", Kind: "TestRemediationTemplate", Verbs: all},
		}}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, remediationKinds(tt.lists))
		})
	}
}

// After a start or a failover, a remediation of a deleted NodeHealthCheck,
// kept by its remediator's finalizer, is of a kind no NodeHealthCheck uses:
// it is looked for, holds its control-plane node, and no NodeHealthCheck
// decides before it is known, lest a second control-plane node be
// remediated beside it. A kind that shows nothing of
// NodeHealthChecks is not watched once it synced.
func TestARemediationThatOutlivedItsNodeHealthCheckIsSeenAfterAStart(t *testing.T) {
	gone, err := newRemediation(testTemplate(nil), &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "deleted", UID: "deleted-uid"}}, "cp-1", true)
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		objects []runtime.Object
		busy    []string
	}{
		{"a leftover", []runtime.Object{gone}, []string{"cp-1"}},
		{"nothing", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
			client := fakeDynamic(tt.objects...)
			served := fixedGroups{{GroupVersion: testGVR.GroupVersion().String(), APIResources: []metav1.APIResource{
				{Name: testGVR.Resource, Kind: "TestRemediation", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}},
				{Name: testTemplateGVR.Resource, Kind: "TestRemediationTemplate", Namespaced: true, Verbs: metav1.Verbs{"list", "watch"}},
			}}}
			informers := kinds.New(ctx, client, client, clock)
			m, _ := testRooms(informers, newResolver(templates.Resettable{RESTMapper: meta.NewDefaultRESTMapper(nil)}, informers, client, clock), clock, client, kubefake.NewClientset().CoreV1().Nodes())
			m.discovery = served

			require.NoError(t, m.WatchAll(context.Background(), func() ([]*v1alpha1.NodeHealthCheck, error) { return nil, nil }))
			obs, err := m.Read(testNHC, &Watched{})
			require.NoError(t, err)
			if !informers.State(testGVR).Synced {
				assert.False(t, obs.Ready, "no decision before the kind is known")
				assert.NotEmpty(t, obs.ControlPlaneUnknown)
			}

			require.Eventually(t, func() bool {
				obs, err = m.Read(testNHC, &Watched{})
				return err == nil && obs.Ready
			}, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, tt.busy, obs.ControlPlane)
			assert.Empty(t, obs.ControlPlaneUnknown)
			if len(tt.objects) == 0 {
				assert.Eventually(t, func() bool { return len(informers.Running()) == 0 }, 10*time.Second, 10*time.Millisecond, "not watched: it holds nothing")
			} else {
				assert.Equal(t, []schema.GroupVersionResource{testGVR}, informers.Running())
			}
		})
	}
}

// fixedGroups serves the same group versions' resources every time.
type fixedGroups []*metav1.APIResourceList

func (f fixedGroups) GroupsAndResources(context.Context) ([]*metav1.APIResourceList, error) {
	return f, nil
}
