package nodecache

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// A page of the catch-up's list is read for its nodes' names and
// resourceVersions alone, with its continue token; anything but a protobuf
// NodeList is declined, for the general decoder.
func TestNodeVersionsReadsNamesAndVersionsOnly(t *testing.T) {
	first, second := fixtureNode(t), fixtureNode(t)
	first.ResourceVersion, second.Name, second.ResourceVersion = "41", "worker-2", "42"
	list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "50", Continue: "next"},
		Items: []corev1.Node{*first, *second}}
	versions := map[string]string{"worker-0": "7"}
	next, err := nodeVersions(encode(t, list), versions)
	require.NoError(t, err)
	assert.Equal(t, "next", next)
	assert.Equal(t, map[string]string{"worker-0": "7", first.Name: "41", "worker-2": "42"}, versions)

	_, err = nodeVersions(encode(t, first), versions)
	assert.ErrorIs(t, err, errNotCanonical, "a Node is no list")
	_, err = nodeVersions([]byte(`{"kind":"NodeList"}`), versions)
	assert.ErrorIs(t, err, errNotCanonical, "JSON is for the general decoder")
}

// A confirmation reads its node as a list of that node by name, which the
// API server serves from its watch cache: consistently, or at least as new
// as an earlier read; an empty list is a node that is gone. The list's
// resourceVersion comes back either way.
func TestNodeIsReadAsAListOfItByName(t *testing.T) {
	node := fixtureNode(t)
	node.ResourceVersion = "41"
	tests := []struct {
		name         string
		items        []corev1.Node
		notOlderThan string
		found        bool
	}{
		{"the node", []corev1.Node{*node}, "", true},
		{"gone", nil, "", false},
		{"the node, not older than a read", []corev1.Node{*node}, "40", true},
		{"gone, not older than a read", nil, "40", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var query map[string][]string
			body := encode(t, &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "43"}, Items: tt.items})
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				query = r.URL.Query()
				w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
				_, _ = w.Write(body)
			}))
			defer server.Close()
			informer, err := NewInformer(&rest.Config{Host: server.URL}, 0)
			require.NoError(t, err)

			got, revision, err := informer.Node(context.Background(), node.Name, tt.notOlderThan)
			assert.Equal(t, []string{"metadata.name=" + node.Name}, query["fieldSelector"])
			assert.Equal(t, "43", revision)
			if tt.notOlderThan == "" {
				assert.Empty(t, query["resourceVersion"], "consistent: no resourceVersion")
				assert.Empty(t, query["resourceVersionMatch"])
			} else {
				assert.Equal(t, []string{tt.notOlderThan}, query["resourceVersion"])
				assert.Equal(t, []string{"NotOlderThan"}, query["resourceVersionMatch"])
			}
			if !tt.found {
				assert.True(t, apierrors.IsNotFound(err), "NotFound: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, node.Name, got.Name)
			assert.Equal(t, "41", got.ResourceVersion)
		})
	}
}

func BenchmarkNodeVersions(b *testing.B) {
	node := fixtureNode(b)
	list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}}
	for range 500 {
		list.Items = append(list.Items, *node)
	}
	data := encode(b, list)
	b.Run("names and versions", func(b *testing.B) {
		for b.Loop() {
			if _, err := nodeVersions(data, map[string]string{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole nodes", func(b *testing.B) {
		c := &compacting{decoder: &decoder{}}
		for b.Loop() {
			if _, _, err := c.decodeFast(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
