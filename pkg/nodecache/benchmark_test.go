package nodecache

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// BenchmarkDecodeNode is what every node event costs to decode, the
// benchmark's 11 KB node in protobuf: client-go's decoder and nodeview.Of,
// the decoder with nothing cached, and the decoder for a heartbeat, whose
// labels and conditions it shares with the cached node. Each keeps a label
// table, as the informer does.
func BenchmarkDecodeNode(b *testing.B) {
	data := encode(b, fixtureNode(b))
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	b.Run("client-go+Of", func(b *testing.B) {
		table := nodeview.NewLabelTable()
		b.ReportAllocs()
		for b.Loop() {
			obj, _, _ := info.Serializer.Decode(data, nil, nil)
			_ = nodeview.Of(obj.(*corev1.Node), table)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		t := &compacting{decoder: &decoder{labelTable: nodeview.NewLabelTable()}}
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = t.decodeFast(data)
		}
	})
	b.Run("decoder-heartbeat", func(b *testing.B) {
		d := &decoder{labelTable: nodeview.NewLabelTable()}
		t := &compacting{decoder: d}
		cached, _, _ := t.decodeFast(data)
		d.previous = func(string) *nodeview.Node { return cached.(*nodeview.Node) }
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = t.decodeFast(data)
		}
	})
}

// BenchmarkCachedNodeBytes reports the heap a cached node holds: 1,000
// distinct copies of the benchmark's node (20 labels, 10 conditions), each
// decoded from protobuf into a map as the informer's cache holds them.
func BenchmarkCachedNodeBytes(b *testing.B) {
	const nodes = 1000
	fixture := fixtureNode(b)
	data := make([][]byte, nodes)
	for i := range data {
		node := fixture.DeepCopy()
		node.Name, node.UID = fmt.Sprintf("node-%05d", i), types.UID(fmt.Sprintf("8d0b6a52-%05d", i))
		node.Labels["kubernetes.io/hostname"] = node.Name
		node.Labels["bench.nhc/group"] = fmt.Sprintf("bench-%02d", i*10/nodes)
		data[i] = encode(b, node)
	}
	for b.Loop() {
		cache := make(map[string]*nodeview.Node, nodes)
		d := &decoder{labelTable: nodeview.NewLabelTable(), previous: func(name string) *nodeview.Node { return cache[name] }}
		t := &compacting{decoder: d}
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		for _, node := range data {
			obj, _, err := t.decodeFast(node)
			if err != nil {
				b.Fatal(err)
			}
			cache[obj.(*nodeview.Node).Name] = obj.(*nodeview.Node)
		}
		goruntime.GC()
		goruntime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/nodes, "B/node")
		goruntime.KeepAlive(cache)
	}
}

// BenchmarkNodeRead is a storm's confirmation read of one node at the API
// server (the benchmark's 11 KB node, in a protobuf list of one), from
// request to nodeview.Node.
func BenchmarkNodeRead(b *testing.B) {
	body := encode(b, &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []corev1.Node{*fixtureNode(b)}})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		_, _ = w.Write(body)
	}))
	defer server.Close()
	informer, err := NewInformer(&rest.Config{Host: server.URL, QPS: -1}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := informer.Node(context.Background(), "worker-1", ""); err != nil {
			b.Fatal(err)
		}
	}
}
