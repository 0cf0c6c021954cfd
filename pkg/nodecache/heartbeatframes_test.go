package nodecache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// While the reads are paced, the watch passes the first heartbeat of a
// window on as a bookmark and drops the others, the cache's node current
// at each all the same; a change always comes; once a create may be due,
// every heartbeat comes. The first events are read over several reads,
// until the watch decoder's buffer holds a whole node.
func TestAPacedWatchPassesOneHeartbeatAWindow(t *testing.T) {
	node := fixtureNode(t)
	version := func(n *corev1.Node, v string, minute int) *corev1.Node {
		c := n.DeepCopy()
		c.ResourceVersion = v
		c.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))
		return c
	}
	changed := version(node, "5", 4)
	changed.Status.Conditions[0].Status = corev1.ConditionUnknown
	stream := []watchEvent{
		{watch.Added, node},
		{watch.Modified, version(node, "2", 1)}, {watch.Modified, version(node, "3", 2)}, {watch.Modified, version(node, "4", 3)},
		{watch.Modified, changed},
		{watch.Modified, version(changed, "6", 5)},
		{watch.Modified, version(changed, "7", 6)}, {watch.Modified, version(changed, "8", 7)},
		{watch.Modified, version(changed, "9", 8)}, {watch.Modified, version(changed, "10", 9)},
	}

	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	pacing := &readPacing{window: 300 * time.Millisecond, clock: clock}
	var cached *nodeview.Node
	d := &decoder{labelTable: nodeview.NewLabelTable(), previous: func(string) *nodeview.Node { return cached }}
	h := newHeartbeats(d.previous)
	serializers := newSerializers(d, nil, h, pacing)
	decoder := watchDecoder(t, serializers, stream...)
	next := func(want watch.EventType, version string) {
		t.Helper()
		typ, obj, err := decoder.Decode()
		require.NoError(t, err)
		assert.Equal(t, want, typ)
		assert.Equal(t, version, obj.(*nodeview.Node).ResourceVersion)
		if typ != watch.Bookmark {
			cached = obj.(*nodeview.Node)
		}
	}

	next(watch.Added, "4711")
	next(watch.Bookmark, "2")
	clock.Step(100 * time.Millisecond)
	next(watch.Modified, "5")
	clock.Step(300 * time.Millisecond)
	next(watch.Bookmark, "6")
	pacing.attention.set("workers", clock.Now())
	next(watch.Bookmark, "7")
	next(watch.Bookmark, "8")
	pacing.attention.set("workers", time.Time{})
	clock.Step(100 * time.Millisecond)
	_, _, err := decoder.Decode()
	assert.Error(t, err, "the end of the stream: 9 and 10 were read past")
	assert.Equal(t, "10", h.currentVersion(cached), "the cached node is current at the last heartbeat read past")
	info, ok := runtime.SerializerInfoForMediaType(serializers.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	assert.Nil(t, info.Serializer.(*compacting).ahead.node, "every node decoded ahead was taken")
}
