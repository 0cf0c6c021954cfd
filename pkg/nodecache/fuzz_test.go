package nodecache

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// FuzzDecoder: whatever bytes arrive, the decoder never panics, and where
// it and the standard decoder both take them, it decodes what nodeview.Of
// keeps of the standard node, with or without a cached node to share with.
func FuzzDecoder(f *testing.F) {
	node := fixtureNode(f)
	seed, err := node.Marshal()
	require.NoError(f, err)
	f.Add(seed)
	node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0}}
	node.DeletionTimestamp = &t0
	if seed, err = node.Marshal(); err == nil {
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decoder{}
		fast, err := d.node(data)
		var full corev1.Node
		if err != nil || full.Unmarshal(data) != nil {
			return
		}
		want := nodeview.Of(&full, nil)
		require.Equal(t, want, fast)
		d.previous = func(string) *nodeview.Node { return fast }
		again, err := d.node(data)
		require.NoError(t, err)
		require.Equal(t, want, again)
	})
}
