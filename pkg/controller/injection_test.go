package controller

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
)

// The check of a create reads a NodeHealthCheck's metadata, as a consistent
// list of it by name, which the API server serves from its watch cache:
// what an API server sends for the metadata alone, or the whole objects
// from one that cannot, decodes the same, and a NodeHealthCheck that is gone
// (an empty list) is NotFound.
func TestTheLiveNodeHealthCheckIsReadByItsMetadata(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
		// want is the UID and generation read; "" for NotFound.
		want       types.UID
		generation int64
	}{
		{"metadata alone", http.StatusOK,
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"workers","uid":"u-1","generation":3}}]}`, "u-1", 3},
		{"the whole objects", http.StatusOK,
			`{"kind":"NodeHealthCheckList","apiVersion":"remediation.medik8s.io/v1alpha1","metadata":{},"items":[{"kind":"NodeHealthCheck","apiVersion":"remediation.medik8s.io/v1alpha1","metadata":{"name":"workers","uid":"u-2","generation":4},"spec":{"minHealthy":"51%"},"status":{"observedNodes":3}}]}`, "u-2", 4},
		{"gone", http.StatusOK,
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[]}`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var accept, selector string
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				accept, selector = r.Header.Get("Accept"), r.URL.Query().Get("fieldSelector")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.code)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer server.Close()
			live := clientNHCs{client: versioned.NewForConfigOrDie(&rest.Config{Host: server.URL}).RemediationV1alpha1()}

			meta, err := live.Metadata(context.Background(), "workers")
			assert.Equal(t, metadataOnly, accept)
			assert.Equal(t, "metadata.name=workers", selector)
			if tt.want == "" {
				assert.True(t, apierrors.IsNotFound(err), "NotFound: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, meta.UID)
			assert.Equal(t, tt.generation, meta.Generation)
		})
	}
}

// A status write reads back the written object's metadata alone, and
// returns the object as sent with it; a server that sends the whole object
// gives the same, and a conflict stays a conflict.
func TestAStatusWriteReadsBackTheMetadataAlone(t *testing.T) {
	tests := []struct {
		name string
		code int
		body string
	}{
		{"metadata alone", http.StatusOK,
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"workers","uid":"u-1","resourceVersion":"8","generation":3}}`},
		{"the whole object", http.StatusOK,
			`{"kind":"NodeHealthCheck","apiVersion":"remediation.medik8s.io/v1alpha1","metadata":{"name":"workers","uid":"u-1","resourceVersion":"8","generation":3},"spec":{"minHealthy":"51%"},"status":{"observedNodes":3}}`},
		{"a conflict", http.StatusConflict,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"the object has been modified"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var method, path, accept string
			var sent v1alpha1.NodeHealthCheck
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				method, path, accept = r.Method, r.URL.Path, r.Header.Get("Accept")
				assert.NoError(t, json.NewDecoder(r.Body).Decode(&sent))
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.code)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer server.Close()
			writer := clientNHCs{client: versioned.NewForConfigOrDie(&rest.Config{Host: server.URL}).RemediationV1alpha1()}
			nhc := workersNHC()
			nhc.UID, nhc.Generation = "u-1", 3
			nhc.Status.ObservedNodes = ptr.To(int32(3))

			written, err := writer.UpdateStatus(context.Background(), nhc)
			assert.Equal(t, http.MethodPut, method)
			assert.Equal(t, "/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks/workers/status", path)
			assert.Equal(t, writtenMetadataOnly, accept)
			assert.Equal(t, "NodeHealthCheck", sent.Kind)
			assert.Equal(t, nhc.Status, sent.Status)
			if tt.code == http.StatusConflict {
				assert.True(t, apierrors.IsConflict(err), "a conflict: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "8", written.ResourceVersion)
			assert.Equal(t, nhc.Spec, written.Spec)
			assert.Equal(t, nhc.Status, written.Status)
			assert.Empty(t, written.Kind, "as the typed client returns it")
		})
	}
}
