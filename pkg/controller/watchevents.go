package controller

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// splittingWatchEvents decodes a JSON watch's events as its serializer
// does, but takes an event's object as the slice of the event it is: the
// JSON serializer parses the whole event, a NodeHealthCheck whose status
// holds a full history is 25 KB, to copy the object out, which the
// object's decoder then reads again. The slice is read before the watch
// reads its next event (client-go's rest/watch Decoder), and the object's
// decoder keeps none of it.
type splittingWatchEvents struct {
	runtime.Serializer
}

var watchEventKind = metav1.SchemeGroupVersion.WithKind("WatchEvent")

func (s splittingWatchEvents) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if event, ok := into.(*metav1.WatchEvent); ok {
		if eventType, object, ok := splitWatchEvent(data); ok {
			event.Type, event.Object = eventType, runtime.RawExtension{Raw: object}
			return event, &watchEventKind, nil
		}
	}
	return s.Serializer.Decode(data, defaults, into)
}

var (
	watchEventTypes  = []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error}
	watchEventStart  = []byte(`{"type":"`)
	watchEventObject = []byte(`","object":`)
)

// splitWatchEvent splits a watch event as the API server writes it,
// metav1.WatchEvent's two fields in their order, {"type":"MODIFIED",
// "object":{...}}, into its type and its object, checked as one JSON
// object. Any other shape, spaces included, is left to the serializer
// (false).
func splitWatchEvent(data []byte) (eventType string, object []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, watchEventStart)
	if !ok {
		return "", nil, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", nil, false
	}
	for _, t := range watchEventTypes {
		if string(rest[:end]) == string(t) {
			eventType = string(t)
		}
	}
	if eventType == "" {
		return "", nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[end:], watchEventObject); !ok {
		return "", nil, false
	}
	// A field after the object would be in the slice: it must be the one
	// object, alone.
	if object, ok = bytes.CutSuffix(bytes.TrimRight(rest, " \t\r\n"), []byte("}")); !ok || len(object) == 0 || object[0] != '{' || !json.Valid(object) {
		return "", nil, false
	}
	return eventType, object, true
}

// withSplittingWatchEvents returns the serializers' media types, the JSON
// watch's events decoded by splittingWatchEvents.
func withSplittingWatchEvents(infos []runtime.SerializerInfo) []runtime.SerializerInfo {
	out := make([]runtime.SerializerInfo, len(infos))
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeJSON && info.StreamSerializer != nil {
			stream := *info.StreamSerializer
			stream.Serializer = splittingWatchEvents{Serializer: stream.Serializer}
			info.StreamSerializer = &stream
		}
		out[i] = info
	}
	return out
}
