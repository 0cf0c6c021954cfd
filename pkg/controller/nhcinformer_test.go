package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
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

func TestOneUnreadableNodeHealthCheckDoesNotHideTheOthers(t *testing.T) {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.SchemeGroupVersion.WithResource("nodehealthchecks"): "NodeHealthCheckList"},
		storedNHC("good", nil, nil), storedNHC("bad", []string{"spec", "stormCooldownDuration"}, "9999999h"))
	informer := NewNodeHealthCheckInformer(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Informer().RunWithContext(ctx)
	require.Eventually(t, informer.Informer().HasSynced, 10e9, 1e7, "the list succeeds")
	good, err := informer.Lister().Get("good")
	require.NoError(t, err)
	_, bad := unreadable(good)
	assert.False(t, bad)
	placeholder, err := informer.Lister().Get("bad")
	require.NoError(t, err)
	_, bad = unreadable(placeholder)
	assert.True(t, bad)
}
