package controller

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
)

// jsonWatchEvents is the JSON serializer of watch events that client-go
// uses for the NodeHealthCheck watch, as the scheme has it.
func jsonWatchEvents(t *testing.T) runtime.Serializer {
	for _, info := range nhcscheme.Codecs.WithoutConversion().SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			return info.StreamSerializer.Serializer
		}
	}
	t.Fatal("no JSON stream serializer")
	return nil
}

// A watch event decodes through splittingWatchEvents as through the JSON
// serializer, whatever its shape: the API server's, whose object is then
// the event's own bytes, and any other, left to the serializer, errors
// included.
func TestSplittingWatchEventsDecodeAsTheSerializer(t *testing.T) {
	serializer := jsonWatchEvents(t)
	object, err := storedNHC("workers", nil, nil).MarshalJSON()
	require.NoError(t, err)
	object = bytes.TrimSpace(object)
	var encoded bytes.Buffer
	require.NoError(t, serializer.Encode(&metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: object}}, &encoded))
	apiServers := bytes.TrimSpace(encoded.Bytes())
	require.Equal(t, `{"type":"MODIFIED","object":`+string(object)+`}`, string(apiServers), "the API server's shape")

	cases := []struct {
		name  string
		event string
		split bool
	}{
		{"as the API server writes it", string(apiServers), true},
		{"with its newline", encoded.String(), true},
		{"added", `{"type":"ADDED","object":{"kind":"NodeHealthCheck"}}`, true},
		{"deleted", `{"type":"DELETED","object":{"kind":"NodeHealthCheck"}}`, true},
		{"bookmark", `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}`, true},
		{"error", `{"type":"ERROR","object":{"kind":"Status","code":410}}`, true},
		{"spaces", `{ "type": "ADDED", "object": {"kind":"NodeHealthCheck"} }`, false},
		{"the object first", `{"object":{"kind":"NodeHealthCheck"},"type":"ADDED"}`, false},
		{"a field after the object", `{"type":"ADDED","object":{"a":1},"x":{"b":2}}`, false},
		{"an escaped type", `{"type":"ADD\u0045D","object":{"a":1}}`, false},
		{"an unknown type", `{"type":"CHANGED","object":{"a":1}}`, false},
		{"a null object", `{"type":"DELETED","object":null}`, false},
		{"cut short", `{"type":"ADDED","object":{"a":`, false},
		{"not an object", `[1]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.event)
			var want, got metav1.WatchEvent
			_, _, wantErr := serializer.Decode(bytes.Clone(data), nil, &want)
			obj, _, err := splittingWatchEvents{Serializer: serializer}.Decode(data, nil, &got)
			if wantErr != nil {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Same(t, &got, obj, "the event decoded into")
			assert.Equal(t, want.Type, got.Type)
			assert.Equal(t, string(want.Object.Raw), string(got.Object.Raw))
			inData := len(got.Object.Raw) > 0 && &got.Object.Raw[0] == &data[bytes.Index(data, got.Object.Raw)]
			assert.Equal(t, tc.split, inData, "the object is the event's own bytes")
		})
	}
}
