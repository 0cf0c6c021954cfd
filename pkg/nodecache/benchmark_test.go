package nodecache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkDecodeNode is what every node event costs to decode, the
// benchmark's 11 KB node in protobuf: client-go's decoder and Trim, the
// decoder with nothing cached, and the decoder for a heartbeat, whose
// labels and conditions it shares with the cached node.
func BenchmarkDecodeNode(b *testing.B) {
	data := encode(b, fixtureNode(b))
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	b.Run("client-go+trim", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, _, _ := info.Serializer.Decode(data, nil, nil)
			_ = Trim(obj.(*corev1.Node))
		}
	})
	b.Run("decoder", func(b *testing.B) {
		t := &trimming{decoder: &decoder{}}
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = t.decodeFast(data)
		}
	})
	b.Run("decoder-heartbeat", func(b *testing.B) {
		d := &decoder{}
		t := &trimming{decoder: d}
		cached, _, _ := t.decodeFast(data)
		d.previous = func(string) *corev1.Node { return cached.(*corev1.Node) }
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = t.decodeFast(data)
		}
	})
}
