package nodecache

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
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
			var cached *health.Node
			h := newHeartbeats(func(string) *health.Node { return cached })
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
func contentNode(content, version string) *health.Node {
	status := corev1.ConditionTrue
	if content == "b" {
		status = corev1.ConditionFalse
	}
	return &health.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: version},
		Labels:     health.LabelsOf("worker-1", map[string]string{"pool": "a"}),
		Conditions: []health.NodeCondition{health.NewNodeCondition(corev1.NodeReady, status, t0.Time)},
	}
}

// TestSameKeptReadsEveryField fails when health.Node keeps a field that
// sameKept does not compare: a change to it would be taken for a heartbeat.
func TestSameKeptReadsEveryField(t *testing.T) {
	var fields []string
	for field := range reflect.TypeFor[health.Node]().Fields() {
		fields = append(fields, field.Name)
	}
	assert.Equal(t, []string{"ObjectMeta", "Labels", "Conditions", "OutOfService"}, fields, "a new field of health.Node: compare it in sameKept")

	full := fixtureNode(t)
	full.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Hour)}
	full.Annotations = map[string]string{"remediation.medik8s.io/manually-confirmed-healthy": "true"}
	full.Spec.Taints = append(full.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0})
	kept := NodeOf(full)
	var meta []string
	value := reflect.ValueOf(kept.ObjectMeta)
	for i := range value.NumField() {
		if !value.Field(i).IsZero() {
			meta = append(meta, value.Type().Field(i).Name)
		}
	}
	assert.Equal(t, []string{"Name", "UID", "ResourceVersion", "CreationTimestamp", "DeletionTimestamp", "Annotations"}, meta, "NodeOf keeps another field of the metadata: compare it in sameKept")

	changes := map[string]func(*corev1.Node){
		"name":             func(n *corev1.Node) { n.Name = "worker-2" },
		"uid":              func(n *corev1.Node) { n.UID = "other" },
		"created":          func(n *corev1.Node) { n.CreationTimestamp = metav1.NewTime(t0.Add(time.Second)) },
		"deleted":          func(n *corev1.Node) { n.DeletionTimestamp = nil },
		"label":            func(n *corev1.Node) { n.Labels["pool"] = "other" },
		"annotation":       func(n *corev1.Node) { n.Annotations = nil },
		"condition status": func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown },
		"transition":       func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Second)) },
		"taint value":      func(n *corev1.Node) { n.Spec.Taints[len(n.Spec.Taints)-1].Value = "other" },
		"taint time": func(n *corev1.Node) {
			n.Spec.Taints[len(n.Spec.Taints)-1].TimeAdded = &metav1.Time{Time: t0.Add(time.Second)}
		},
		"taint removed": func(n *corev1.Node) { n.Spec.Taints = n.Spec.Taints[:len(n.Spec.Taints)-1] },
	}
	for name, change := range changes {
		changed := full.DeepCopy()
		change(changed)
		assert.False(t, sameKept(kept, NodeOf(changed)), name)
	}
	heartbeat := full.DeepCopy()
	heartbeat.ResourceVersion = "4712"
	for i := range heartbeat.Status.Conditions {
		heartbeat.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		heartbeat.Status.Conditions[i].Message = "still fine"
	}
	assert.True(t, sameKept(kept, NodeOf(heartbeat)), "a heartbeat changes nothing kept")
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

	var cached *health.Node
	d := &decoder{previous: func(string) *health.Node { return cached }}
	h := newHeartbeats(d.previous)
	serializers := newSerializers(d, nil, h)
	decoder := watchDecoder(t, serializers, watchEvent{watch.Added, node}, watchEvent{watch.Modified, heartbeat}, watchEvent{watch.Modified, changed})

	typ, obj, err := decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Added, typ)
	cached = obj.(*health.Node)

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Bookmark, typ, "a heartbeat")
	assert.Equal(t, "4712", obj.(*health.Node).ResourceVersion)
	assert.Equal(t, "4712", h.currentVersion(cached), "the cached node is current at the heartbeat")

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Modified, typ, "a change")
	assert.Equal(t, standard(t, encode(t, changed)), obj)
	info, ok := runtime.SerializerInfoForMediaType(serializers.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	assert.Nil(t, info.Serializer.(*compacting).ahead.node, "every node decoded ahead was taken")
}
