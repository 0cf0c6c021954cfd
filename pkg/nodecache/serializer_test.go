package nodecache

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// TestWatchDecodesCompactNodes decodes a protobuf watch stream as client-go
// does, through the negotiated serializers: nodes come as health.Nodes, a
// bookmark keeps the end of the initial events, an error is a Status.
func TestWatchDecodesCompactNodes(t *testing.T) {
	node := fixtureNode(t)
	bookmark := &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	gone := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}

	var ended []string
	decoder := watchDecoder(t, newSerializers(&decoder{}, func(rv string) { ended = append(ended, rv) }, nil, nil),
		watchEvent{watch.Modified, node}, watchEvent{watch.Bookmark, bookmark}, watchEvent{watch.Error, gone})

	typ, obj, err := decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Modified, typ)
	assert.Equal(t, standard(t, encode(t, node)), obj)
	assert.Empty(t, ended, "a node is no end of the initial events")

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Bookmark, typ)
	assert.Equal(t, "true", obj.(*nodeview.Node).Annotations[metav1.InitialEventsAnnotationKey])
	assert.Equal(t, []string{"99"}, ended, "the bookmark ends the initial events, at its resourceVersion: the watch is paced from here")

	typ, obj, err = decoder.Decode()
	require.NoError(t, err)
	assert.Equal(t, watch.Error, typ)
	assert.Equal(t, metav1.StatusReasonExpired, obj.(*metav1.Status).Reason)
}

// TestJSONNodesAreCompact: a server that answers JSON gets the same cache.
func TestJSONNodesAreCompact(t *testing.T) {
	node := fixtureNode(t)
	node.Kind, node.APIVersion = "Node", "v1"
	data, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), node)
	require.NoError(t, err)
	info, ok := runtime.SerializerInfoForMediaType(newSerializers(&decoder{}, nil, nil, nil).SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	obj, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(data, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, standard(t, encode(t, node)), obj)
}

// TestJSONNodeListsAreCompact: so does its list, as the protobuf one.
func TestJSONNodeListsAreCompact(t *testing.T) {
	first, second := fixtureNode(t), fixtureNode(t)
	second.Name = "worker-2"
	list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "12", Continue: "next"},
		Items: []corev1.Node{*first, *second}}
	data, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), list)
	require.NoError(t, err)
	info, ok := runtime.SerializerInfoForMediaType(newSerializers(&decoder{}, nil, nil, nil).SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	obj, _, err := runtime.WithoutVersionDecoder{Decoder: info.Serializer}.Decode(data, nil, nil)
	require.NoError(t, err)
	fast, _, err := (&compacting{decoder: &decoder{}}).decodeFast(encode(t, list))
	require.NoError(t, err)
	assert.Equal(t, fast, obj)
}

func TestEventTypesCostNoAllocation(t *testing.T) {
	modified := []byte(watch.Modified)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = eventType(modified) }))
	assert.Equal(t, "SURPRISE", eventType([]byte("SURPRISE")))
}

// watchEvent is one event of a watch stream a test writes.
type watchEvent struct {
	typ watch.EventType
	obj runtime.Object
}

// watchDecoder writes the events as a protobuf watch stream, and returns
// client-go's decoder of it through the serializers, as a watch has.
func watchDecoder(t testing.TB, s *serializers, stream ...watchEvent) *restclientwatch.Decoder {
	t.Helper()
	var buf bytes.Buffer
	frames := protobuf.LengthDelimitedFramer.NewFrameWriter(&buf)
	raw := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	for _, e := range stream {
		event := &metav1.WatchEvent{Type: string(e.typ), Object: runtime.RawExtension{Raw: encode(t, e.obj)}}
		require.NoError(t, raw.Encode(event, frames))
	}
	negotiator := runtime.NewClientNegotiator(s, corev1.SchemeGroupVersion)
	objects, events, framer, err := negotiator.StreamDecoder(runtime.ContentTypeProtobuf, nil)
	require.NoError(t, err)
	return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(&buf)), events), objects)
}
