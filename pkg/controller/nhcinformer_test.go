package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhcscheme "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/scheme"
)

// storedNHC is a NodeHealthCheck as the API server may hold it, with a spec
// field set to a raw value.
func storedNHC(name string, field []string, value any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "5", "generation": int64(3)},
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": map[string]any{"role": "worker"}},
			"minHealthy":          "51%",
			"remediationTemplate": map[string]any{"apiVersion": "a/v1", "kind": "XTemplate", "namespace": "ns", "name": "x"},
			"unhealthyConditions": []any{map[string]any{"type": "Ready", "status": "False", "duration": "300s"}},
		},
	}}
	if field != nil {
		if err := unstructured.SetNestedField(u.Object, value, field...); err != nil {
			panic(err)
		}
	}
	return u
}

func TestDecodingOneNodeHealthCheckAtATime(t *testing.T) {
	cases := []struct {
		name  string
		field []string
		value any
		// wantError is a part of the decoding error, "" for a good object.
		wantError string
	}{
		{"a good object", nil, nil, ""},
		{"a duration that overflows", []string{"spec", "stormCooldownDuration"}, "9999999h", "invalid duration"},
		{"a sum of durations that overflows", []string{"spec", "healthyDelay"}, "2000000h2000000h", "invalid duration"},
		{"an integer above int32", []string{"spec", "stormRecoveryThreshold"}, int64(1) << 40, "stormRecoveryThreshold"},
		{"an int-or-string above int32", []string{"spec", "minHealthy"}, int64(1) << 40, "minHealthy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := decodeNodeHealthCheck(storedNHC("workers", tc.field, tc.value))
			why, bad := unreadable(nhc)
			if tc.wantError == "" {
				assert.False(t, bad, why)
				assert.Equal(t, "51%", nhc.Spec.MinHealthy.String())
				return
			}
			require.True(t, bad)
			assert.Contains(t, why, tc.wantError)
			assert.Equal(t, metav1.ObjectMeta{Name: "workers", UID: "uid-workers", ResourceVersion: "5", Generation: 3,
				Annotations: map[string]string{unreadableAnnotation: why}}, nhc.ObjectMeta, "its metadata, for the status and the events")
		})
	}
}

// One NodeHealthCheck that cannot be decoded fails neither the list nor
// the watch: it is a placeholder, and the others are decoded, whether the
// informer lists, or streams the list as a watch's initial events, or
// watches.
func TestOneUnreadableNodeHealthCheckDoesNotHideTheOthers(t *testing.T) {
	good, bad := storedNHC("good", nil, nil), storedNHC("bad", []string{"spec", "stormCooldownDuration"}, "9999999h")
	later := storedNHC("later", []string{"spec", "healthyDelay"}, "2000000h2000000h")
	list := map[string]any{"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheckList",
		"metadata": map[string]any{"resourceVersion": "10"}, "items": []any{good.Object, bad.Object}}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		events := json.NewEncoder(w)
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			for _, u := range []*unstructured.Unstructured{good, bad} {
				writeWatchEvent(w, "ADDED", u)
			}
			// Encoded from a map, the object first: the serializer's path.
			_ = events.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
				"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",
				"metadata": map[string]any{"resourceVersion": "10", "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}}}})
		}
		writeWatchEvent(w, "ADDED", later)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer server.Close()
	informer, err := NewNodeHealthCheckInformer(&rest.Config{Host: server.URL})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Informer().RunWithContext(ctx)
	require.Eventually(t, informer.Informer().HasSynced, 10e9, 1e7, "the list succeeds")
	read, err := informer.Lister().Get("good")
	require.NoError(t, err)
	_, unread := unreadable(read)
	assert.False(t, unread)
	assert.Equal(t, "51%", read.Spec.MinHealthy.String())
	for _, name := range []string{"bad", "later"} {
		require.Eventually(t, func() bool { _, err := informer.Lister().Get(name); return err == nil }, 10e9, 1e7, name)
		placeholder, err := informer.Lister().Get(name)
		require.NoError(t, err)
		_, unread = unreadable(placeholder)
		assert.True(t, unread, name)
	}
}

// writeWatchEvent writes a watch event as the API server does, its type
// first.
func writeWatchEvent(w io.Writer, eventType string, u *unstructured.Unstructured) {
	object, err := u.MarshalJSON()
	if err != nil {
		panic(err)
	}
	_, _ = fmt.Fprintf(w, "{\"type\":%q,\"object\":%s}\n", eventType, bytes.TrimSpace(object))
}

// A watch event of a NodeHealthCheck at the resourceVersion the API server
// answered a status write of this controller with is the answered object,
// not decoded again; any other version, and any other object, is decoded.
func TestTheWatchTakesTheAnsweredObjectOfTheSameVersion(t *testing.T) {
	answered := &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "workers", ResourceVersion: "5"}}
	lookup := answeredLookup(func(name, resourceVersion string) *v1alpha1.NodeHealthCheck {
		if name == answered.Name && resourceVersion == answered.ResourceVersion {
			return answered
		}
		return nil
	})
	pointer := &atomic.Pointer[answeredLookup]{}
	pointer.Store(&lookup)
	decoder := objectByObjectSerializer{NegotiatedSerializer: nhcscheme.Codecs.WithoutConversion(), answered: pointer}.
		DecoderToVersion(nhcscheme.Codecs.UniversalDeserializer(), v1alpha1.SchemeGroupVersion)
	decode := func(u *unstructured.Unstructured) *v1alpha1.NodeHealthCheck {
		data, err := u.MarshalJSON()
		require.NoError(t, err)
		obj, _, err := decoder.Decode(data, nil, nil)
		require.NoError(t, err)
		return obj.(*v1alpha1.NodeHealthCheck)
	}

	assert.Same(t, answered, decode(storedNHC("workers", nil, nil)))
	newer := storedNHC("workers", []string{"metadata", "resourceVersion"}, "6")
	assert.Equal(t, "6", decode(newer).ResourceVersion)
	other := decode(storedNHC("other", nil, nil))
	assert.Equal(t, "other", other.Name)
	assert.Equal(t, "51%", other.Spec.MinHealthy.String())
}

func TestPeekMetadata(t *testing.T) {
	cases := []struct {
		name, data string
		want       peekedMetadata
		ok         bool
	}{
		{"as the API server writes", `{"apiVersion":"a/v1","kind":"K","metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:status":{}}}],"name":"n","resourceVersion":"7","uid":"u"},"spec":{}}`, peekedMetadata{Name: "n", ResourceVersion: "7"}, true},
		{"metadata last", `{"spec":{"a":[1,{"b":"}"}]},"metadata":{"name":"n","resourceVersion":"7"}}`, peekedMetadata{Name: "n", ResourceVersion: "7"}, true},
		{"no metadata", `{"kind":"K"}`, peekedMetadata{}, false},
		{"not an object", `[1,2]`, peekedMetadata{}, false},
		{"cut short", `{"apiVersion":"a/v1","metadata":{"name":"n"`, peekedMetadata{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := peekMetadata([]byte(tc.data))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
