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

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// step is one watch event in a heartbeats test: the node it carries (by
// content and resourceVersion), and whether the informer stores it before
// the next event comes.
type step struct {
	event   watch.EventType
	content string
	version string
	stored  bool
	// forget and relist happen before the event: a new list starts, or
	// the cache is replaced by a list's copies of the nodes.
	forget, relist bool
}

func TestHeartbeats(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
		// heartbeat is, by step, whether it is passed on as a bookmark.
		heartbeat []bool
		// current is the resourceVersion the cache's node is current at.
		current string
	}{{
		name:      "an update equal to the cached node is a heartbeat",
		steps:     []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "a", version: "2"}, {event: watch.Modified, content: "a", version: "3"}},
		heartbeat: []bool{false, true, true},
		current:   "3",
	}, {
		name:      "a change is passed on",
		steps:     []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "b", version: "2", stored: true}, {event: watch.Modified, content: "b", version: "3"}},
		heartbeat: []bool{false, false, true},
		current:   "3",
	}, {
		name: "an update that reverts a change the informer has not stored yet is passed on",
		steps: []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "b", version: "2"},
			{event: watch.Modified, content: "a", version: "3", stored: true}},
		heartbeat: []bool{false, false, false},
		current:   "3",
	}, {
		name: "an update a stopped watch dropped is passed on when the next watch reads it again",
		steps: []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "b", version: "2"},
			{event: watch.Modified, content: "b", version: "2", stored: true}},
		heartbeat: []bool{false, false, false},
		current:   "2",
	}, {
		name: "a node deleted and added again",
		steps: []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Deleted, content: "a", version: "2"},
			{event: watch.Added, content: "a", version: "3", stored: true}, {event: watch.Modified, content: "a", version: "4"}},
		heartbeat: []bool{false, false, false, true},
		current:   "4",
	}, {
		name:      "after a new list starts, the first update is passed on",
		steps:     []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "a", version: "2", forget: true, stored: true}},
		heartbeat: []bool{false, false},
		current:   "2",
	}, {
		name: "a cache replaced by a list: the first update is passed on",
		steps: []step{{event: watch.Added, content: "a", version: "1", stored: true}, {event: watch.Modified, content: "a", version: "2", relist: true, stored: true},
			{event: watch.Modified, content: "a", version: "3"}},
		heartbeat: []bool{false, false, true},
		current:   "3",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cached *nodeview.Node
			h := newHeartbeats(func(string) *nodeview.Node { return cached })
			var got []bool
			for _, s := range tc.steps {
				if s.forget {
					h.forget()
				}
				if s.relist {
					copied := *cached
					cached = &copied
				}
				node := contentNode(s.content, s.version)
				got = append(got, h.observe(s.event, node))
				if s.stored && s.event != watch.Deleted {
					cached = node
				}
			}
			assert.Equal(t, tc.heartbeat, got)
			assert.Equal(t, tc.current, h.currentVersion(cached))
		})
	}
}

// contentNode returns a node whose content is a (healthy) or b (not ready).
func contentNode(content, version string) *nodeview.Node {
	status := corev1.ConditionTrue
	if content == "b" {
		status = corev1.ConditionFalse
	}
	return &nodeview.Node{
		Meta:       nodeview.Meta{Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: version},
		Labels:     nodeview.LabelsOf("worker-1", map[string]string{"pool": "a"}, nil),
		Conditions: []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, status, t0.Time)},
	}
}

// TestTheWatchPassesHeartbeatsOnAsBookmarks decodes a protobuf watch as
// client-go does: a heartbeat of the cached node comes as a bookmark at
// its resourceVersion, a change as the update, each node decoded once.
func TestTheWatchPassesHeartbeatsOnAsBookmarks(t *testing.T) {
	node := fixtureNode(t)
	heartbeat := node.DeepCopy()
	heartbeat.ResourceVersion = "4712"
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	changed := heartbeat.DeepCopy()
	changed.ResourceVersion = "4713"
	changed.Status.Conditions[0].Status = corev1.ConditionUnknown

	var cached *nodeview.Node
	d := &decoder{labelTable: nodeview.NewLabelTable(), previous: func(string) *nodeview.Node { return cached }}
	h := newHeartbeats(d.previous)
	serializers := newSerializers(d, nil, h, nil)
	decoder := watchDecoder(t, serializers, watchEvent{watch.Added, node}, watchEvent{watch.Modified, heartbeat}, watchEvent{watch.Modified, changed})

	typ, obj, err := decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Added, typ)
	cached = obj.(*nodeview.Node)

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Bookmark, typ, "a heartbeat")
	assert.Equal(t, "4712", obj.(*nodeview.Node).ResourceVersion)
	assert.Equal(t, "4712", h.currentVersion(cached), "the cached node is current at the heartbeat")

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Modified, typ, "a change")
	assert.Equal(t, standard(t, encode(t, changed)), obj)
	info, ok := runtime.SerializerInfoForMediaType(serializers.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	assert.Nil(t, info.Serializer.(*compacting).ahead.node, "every node decoded ahead was taken")
}

// BenchmarkObserveHeartbeat is what the watch spends on an update to tell
// a heartbeat: the benchmark's node, decoded again, against the cached one.
func BenchmarkObserveHeartbeat(b *testing.B) {
	d := &decoder{labelTable: nodeview.NewLabelTable()}
	decode := func() *nodeview.Node {
		obj, _, err := (&compacting{decoder: d}).decodeFast(encode(b, fixtureNode(b)))
		require.NoError(b, err)
		return obj.(*nodeview.Node)
	}
	cached := decode()
	d.previous = func(string) *nodeview.Node { return cached }
	h := newHeartbeats(d.previous)
	h.observe(watch.Added, cached)
	heartbeat := decode()
	b.ReportAllocs()
	for b.Loop() {
		if !h.observe(watch.Modified, heartbeat) {
			b.Fatal("a heartbeat is taken for a change")
		}
	}
}
