package served

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// apiServer serves the discovery documents of a remediator's group, and
// fails another group's; reads counts the requests.
func apiServer(t *testing.T, snr *[]metav1.APIResource, reads *atomic.Int32) *Kinds {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		var doc any
		switch r.URL.Path {
		case "/apis":
			doc = metav1.APIGroupList{Groups: []metav1.APIGroup{
				{Name: "snr.medik8s.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "snr.medik8s.io/v1alpha1", Version: "v1alpha1"}}},
				{Name: "broken.example.com", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "broken.example.com/v1", Version: "v1"}}},
			}}
		case "/apis/snr.medik8s.io/v1alpha1":
			if *snr == nil {
				http.NotFound(w, r)
				return
			}
			doc = metav1.APIResourceList{GroupVersion: "snr.medik8s.io/v1alpha1", APIResources: *snr}
		case "/apis/broken.example.com/v1":
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(server.Close)
	kinds, err := NewForConfig(&rest.Config{Host: server.URL})
	require.NoError(t, err)
	return kinds
}

func TestKindsMapTemplateKindsAndNoticeChangesAfterAReset(t *testing.T) {
	snr := []metav1.APIResource{
		{Name: "selfnoderemediationtemplates", Kind: "SelfNodeRemediationTemplate", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
		{Name: "selfnoderemediations", Kind: "SelfNodeRemediation", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}},
		{Name: "selfnoderemediations/status", Kind: "SelfNodeRemediation", Namespaced: true},
	}
	var reads atomic.Int32
	kinds := apiServer(t, &snr, &reads)
	gk := schema.GroupKind{Group: "snr.medik8s.io", Kind: "SelfNodeRemediation"}

	m, err := kinds.RESTMapping(gk, "v1alpha1")
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersionResource{Group: "snr.medik8s.io", Version: "v1alpha1", Resource: "selfnoderemediations"}, m.Resource, "the resource, not its status")
	assert.Equal(t, meta.RESTScopeNameNamespace, m.Scope.Name())
	gvk, err := kinds.KindFor(m.Resource)
	require.NoError(t, err)
	assert.Equal(t, gk.WithVersion("v1alpha1"), gvk)
	_, err = kinds.RESTMapping(schema.GroupKind{Group: "snr.medik8s.io", Kind: "Other"}, "v1alpha1")
	assert.True(t, meta.IsNoMatchError(err), "a kind the group version does not serve: %v", err)
	assert.EqualValues(t, 1, reads.Load(), "a group version is read once")

	// The remediator is uninstalled: noticed after a reset only.
	snr = nil
	_, err = kinds.RESTMapping(gk, "v1alpha1")
	require.NoError(t, err, "until a reset, what was read holds")
	kinds.Reset()
	_, err = kinds.RESTMapping(gk, "v1alpha1")
	assert.True(t, meta.IsNoMatchError(err), "a group version no longer served: %v", err)
	_, err = kinds.KindFor(m.Resource)
	assert.True(t, meta.IsNoMatchError(err), "%v", err)

	_, err = kinds.RESTMapping(schema.GroupKind{Group: "broken.example.com", Kind: "X"}, "v1")
	assert.Error(t, err)
	assert.False(t, meta.IsNoMatchError(err), "a failed read is no answer: worth a retry")
	_, err = kinds.RESTMapping(gk)
	assert.Error(t, err, "a kind without a version")
}

func TestGroupsAndResourcesLeaveOutTheGroupsThatFail(t *testing.T) {
	snr := []metav1.APIResource{{Name: "selfnoderemediations", Kind: "SelfNodeRemediation", Namespaced: true}}
	var reads atomic.Int32
	lists, err := apiServer(t, &snr, &reads).GroupsAndResources(context.Background())
	require.Error(t, err)
	assert.True(t, IsGroupFailed(err), "%v", err)
	require.Len(t, lists, 1)
	assert.Equal(t, "snr.medik8s.io/v1alpha1", lists[0].GroupVersion)
}

// A sync's context bounds its discovery reads: an API server that does not
// answer holds the sync no longer than its deadline.
func TestAReadEndsWithItsContext(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(server.Close)
	kinds, err := NewForConfig(&rest.Config{Host: server.URL})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = kinds.MappingContext(ctx, schema.GroupKind{Group: "snr.medik8s.io", Kind: "SelfNodeRemediation"}, "v1alpha1")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = kinds.GroupsAndResources(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}
