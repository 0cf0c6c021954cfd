package nodecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
