package nodecache

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

var t0 = metav1.NewTime(time.Date(2026, 3, 15, 10, 0, 0, 0, time.UTC))

// fixtureNode is the scale benchmark's node, as a kubelet and
// node-problem-detector report an EKS worker, with the managed fields the
// API server adds.
func fixtureNode(t testing.TB) *corev1.Node {
	t.Helper()
	data, err := os.ReadFile("../../test/scale/testdata/node.json")
	require.NoError(t, err)
	node := &corev1.Node{}
	require.NoError(t, json.Unmarshal(data, node))
	node.Name, node.UID, node.ResourceVersion, node.CreationTimestamp = "worker-1", "8d0b6a52-1", "4711", t0
	for _, manager := range []string{"kubelet", "kube-controller-manager"} {
		node.ManagedFields = append(node.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t0,
			FieldsType: "FieldsV1", FieldsV1: rawFields([]byte(`{"f:status":{"f:conditions":{}}}`)),
		})
	}
	return node
}

// encode is the protobuf the API server sends: prefix, envelope, node.
func encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &buf))
	return buf.Bytes()
}

// standard decodes as client-go does, then keeps what nodeview.Of keeps.
func standard(t testing.TB, data []byte) *nodeview.Node {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	obj, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(data, nil, nil)
	require.NoError(t, err)
	return nodeview.Of(obj.(*corev1.Node), nil)
}

func TestDecoderKeepsWhatOfKeeps(t *testing.T) {
	cases := []struct {
		name   string
		change func(*corev1.Node)
	}{
		{"a kubelet's node", func(*corev1.Node) {}},
		{"fenced", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0},
				{Key: corev1.TaintNodeOutOfService, Value: "second", Effect: corev1.TaintEffectNoSchedule},
			}
		}},
		{"being deleted", func(n *corev1.Node) { n.DeletionTimestamp = &t0 }},
		{"confirmed healthy", func(n *corev1.Node) { n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = "" }},
		{"a watch's bookmark", func(n *corev1.Node) {
			*n = corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
		}},
		{"no labels, annotations or conditions", func(n *corev1.Node) {
			n.Labels, n.Annotations, n.Status.Conditions = nil, nil, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := fixtureNode(t)
			tc.change(node)
			data := encode(t, node)
			obj, _, err := (&compacting{decoder: &decoder{}}).decodeFast(data)
			require.NoError(t, err, "the fast path takes it")
			assert.Equal(t, standard(t, data), obj)
		})
	}
}

func TestDecoderSharesWhatDidNotChange(t *testing.T) {
	node := fixtureNode(t)
	var cached *nodeview.Node
	d := &decoder{previous: func(string) *nodeview.Node { return cached }}
	decode := func() *nodeview.Node {
		obj, _, err := (&compacting{decoder: d}).decodeFast(encode(t, node))
		require.NoError(t, err)
		return obj.(*nodeview.Node)
	}
	cached = decode()

	node.ResourceVersion = "4712"
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
	}
	heartbeat := decode()
	assert.Equal(t, "4712", heartbeat.ResourceVersion)
	assert.True(t, cached.Labels.Equal(heartbeat.Labels), "a heartbeat shares the labels")
	assert.Same(t, &cached.Conditions[0], &heartbeat.Conditions[0], "and the conditions")
	cached = heartbeat

	node.Labels["topology.kubernetes.io/zone"] = "elsewhere"
	node.Status.Conditions[0].Status = corev1.ConditionUnknown
	changed := decode()
	assert.False(t, cached.Labels.Equal(changed.Labels))
	assert.Equal(t, "elsewhere", changed.Labels.Get("topology.kubernetes.io/zone"))
	assert.NotEqual(t, "elsewhere", cached.Labels.Get("topology.kubernetes.io/zone"), "the cached node is untouched")
	assert.Equal(t, corev1.ConditionUnknown, changed.Conditions[0].Status())
	assert.Equal(t, standard(t, encode(t, node)), changed)
}

func TestDecoderDecodesNodeLists(t *testing.T) {
	first, second := fixtureNode(t), fixtureNode(t)
	second.Name = "worker-2"
	remaining := int64(7)
	list := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next", RemainingItemCount: &remaining},
		Items: []corev1.Node{*first, *second}}
	obj, _, err := (&compacting{decoder: &decoder{}}).decodeFast(encode(t, list))
	require.NoError(t, err)
	want := &NodeList{ListMeta: list.ListMeta, Items: []nodeview.Node{
		*standard(t, encode(t, first)), *standard(t, encode(t, second)),
	}}
	assert.Equal(t, want, obj)
}

func TestDecoderDeclinesOtherKinds(t *testing.T) {
	status := &metav1.Status{Status: metav1.StatusFailure, Message: "too old", Code: 410}
	status.Kind, status.APIVersion = "Status", "v1"
	_, _, err := (&compacting{decoder: &decoder{}}).decodeFast(encode(t, status))
	assert.ErrorIs(t, err, errNotCanonical)
}

// rawFields is managed fields of these bytes.
func rawFields(raw []byte) *metav1.FieldsV1 {
	fields := &metav1.FieldsV1{}
	fields.SetRawBytes(raw)
	return fields
}
