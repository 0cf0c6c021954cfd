package nodecache

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// protobufPrefix starts every Kubernetes protobuf object, before its
// runtime.Unknown envelope.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// Field numbers of runtime.Unknown, its TypeMeta, metav1.WatchEvent and
// runtime.RawExtension.
const (
	unknownTypeMeta, unknownRaw, unknownContentEncoding = 1, 2, 3
	typeMetaAPIVersion, typeMetaKind                    = 1, 2
	watchEventType, watchEventObject                    = 1, 2
	rawExtensionRaw                                     = 1
)

var (
	nodeKind     = corev1.SchemeGroupVersion.WithKind("Node")
	nodeListKind = corev1.SchemeGroupVersion.WithKind("NodeList")
)

// serializers speaks protobuf and JSON to the API server for nodes, and
// decodes every Node as a nodeview.Node and every NodeList as a NodeList:
// protobuf ones by the decoder, anything else by client-go's serializers
// and then nodeview.Of, with the decoder's label table.
type serializers struct {
	infos []runtime.SerializerInfo
}

// With heartbeats, a watch passes a node update that changes nothing the
// cache keeps on as a bookmark (heartbeats), and with pacing too, drops
// most of them while its reads are paced (heartbeatFramer); the reads at
// the API server have neither.
func newSerializers(d *decoder, initialEventsEnded func(resourceVersion string), heartbeats *heartbeats, pacing *readPacing) *serializers {
	var s serializers
	for _, info := range kubeclient.Codecs.SupportedMediaTypes() {
		switch info.MediaType {
		case runtime.ContentTypeProtobuf:
			objects := &compacting{Serializer: info.Serializer, decoder: d, labelTable: d.labelTable, initialEventsEnded: initialEventsEnded, ahead: &decodedAhead{}}
			info.Serializer = objects
			raw := protobuf.NewRawSerializer(kubeclient.Scheme, kubeclient.Scheme)
			events := &watchEvents{Serializer: raw}
			if heartbeats != nil {
				events.objects, events.heartbeats = objects, heartbeats
			}
			var framer runtime.Framer = protobuf.LengthDelimitedFramer
			if heartbeats != nil && pacing != nil {
				framer = heartbeatFramer{events: events, pacing: pacing}
			}
			info.StreamSerializer = &runtime.StreamSerializerInfo{Serializer: events, Framer: framer}
		case runtime.ContentTypeJSON:
			info.Serializer = &compacting{Serializer: info.Serializer, labelTable: d.labelTable, initialEventsEnded: initialEventsEnded}
		default:
			continue
		}
		s.infos = append(s.infos, info)
	}
	return &s
}

func (s *serializers) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

func (s *serializers) EncoderForVersion(encoder runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return runtime.WithVersionEncoder{Version: gv, Encoder: encoder, ObjectTyper: kubeclient.Scheme}
}

// DecoderToVersion does no conversion and leaves the type meta empty, as
// client-go's typed clients do.
func (s *serializers) DecoderToVersion(decoder runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return runtime.WithoutVersionDecoder{Decoder: decoder}
}

// compacting decodes with the decoder where it can, else with the
// serializer and then nodeview.Of.
type compacting struct {
	runtime.Serializer
	// decoder decodes protobuf Nodes and NodeLists; nil for JSON.
	decoder *decoder
	// labelTable is the decoder's: the nodes the serializer decodes share
	// their labels with the cache's too.
	labelTable *nodeview.LabelTable
	// initialEventsEnded, when set, is called with its resourceVersion on
	// the bookmark that ends a watch's initial events.
	initialEventsEnded func(resourceVersion string)
	// ahead holds the node a watch decoded with its event.
	ahead *decodedAhead
}

func (t *compacting) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if t.decoder != nil && into == nil {
		if node := t.ahead.take(data); node != nil {
			return node, &nodeKind, nil
		}
		if obj, gvk, err := t.decodeFast(data); err == nil {
			t.noticeInitialEventsEnd(obj)
			return obj, gvk, nil
		}
	}
	obj, gvk, err := t.Serializer.Decode(data, defaults, into)
	if err != nil {
		return obj, gvk, err
	}
	switch o := obj.(type) {
	case *corev1.Node:
		node := nodeview.Of(o, t.labelTable)
		t.noticeInitialEventsEnd(node)
		return node, gvk, nil
	case *corev1.NodeList:
		list := &NodeList{ListMeta: o.ListMeta, Items: make([]nodeview.Node, len(o.Items))}
		for i := range o.Items {
			list.Items[i] = *nodeview.Of(&o.Items[i], t.labelTable)
		}
		return list, gvk, nil
	}
	return obj, gvk, nil
}

// noticeInitialEventsEnd tells of the bookmark that ends a watch's initial
// events: the only node object with that annotation. Others keep no
// annotation but the rare manual confirmation, so this costs a length check.
func (t *compacting) noticeInitialEventsEnd(obj runtime.Object) {
	node, ok := obj.(*nodeview.Node)
	if ok && len(node.Annotations) > 0 && node.Annotations[metav1.InitialEventsAnnotationKey] == "true" && t.initialEventsEnded != nil {
		t.initialEventsEnded(node.ResourceVersion)
	}
}

// decodeFast decodes a protobuf Node or NodeList by the decoder; it declines
// (errNotCanonical) anything else.
func (t *compacting) decodeFast(data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	kind, body, err := unwrap(data)
	if err != nil {
		return nil, nil, err
	}
	switch string(kind) {
	case nodeKind.Kind:
		node, err := t.decoder.node(body)
		return node, &nodeKind, err
	case nodeListKind.Kind:
		list, err := t.decoder.list(body)
		return list, &nodeListKind, err
	}
	return nil, nil, errNotCanonical
}

// unwrap returns the kind and the bytes of a protobuf object of core/v1;
// it declines (errNotCanonical) anything else.
func unwrap(data []byte) (kind, body []byte, err error) {
	raw, ok := bytes.CutPrefix(data, protobufPrefix)
	if !ok {
		return nil, nil, errNotCanonical
	}
	var apiVersion []byte
	r := reader{b: raw}
	for r.next() {
		switch r.num {
		case unknownTypeMeta:
			meta := reader{b: r.val}
			for meta.next() {
				switch meta.num {
				case typeMetaAPIVersion:
					apiVersion = meta.val
				case typeMetaKind:
					kind = meta.val
				}
			}
		case unknownRaw:
			body = r.val
		case unknownContentEncoding:
			if len(r.val) > 0 {
				return nil, nil, errNotCanonical
			}
		}
	}
	if r.err != nil || string(apiVersion) != nodeKind.GroupVersion().String() {
		return nil, nil, errNotCanonical
	}
	return kind, body, nil
}
