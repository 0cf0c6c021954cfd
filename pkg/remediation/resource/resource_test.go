package resource

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

func TestTemplateSpec(t *testing.T) {
	cases := []struct {
		name    string
		spec    any
		want    map[string]any
		wantErr string
	}{
		{"empty", map[string]any{}, map[string]any{}, ""},
		{"null", nil, map[string]any{}, ""},
		{"a string", "reboot", nil, "is a string, not an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": tc.spec}}}}
			got, err := TemplateSpec(tmpl)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := TemplateSpec(&unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{}}}})
	assert.EqualError(t, err, "it has no spec.template.spec")
}

func TestSummarize(t *testing.T) {
	created := time.Date(2026, 3, 20, 15, 5, 5, 0, time.UTC)
	r := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1",
		"kind":       "TestRemediation",
		"metadata": map[string]any{
			"name": "worker-1-x7k2p", "namespace": "remediators", "uid": "r-uid",
			"creationTimestamp": "2026-03-20T15:05:05Z",
			"deletionTimestamp": "2026-03-20T16:00:00Z",
			"annotations": map[string]any{
				"remediation.medik8s.io/node-name":                   "worker-1",
				"remediation.medik8s.io/template-name":               "reboot",
				"remediation.medik8s.io/nhc-timed-out":               "2026-03-20T15:10:05Z",
				"remediation.medik8s.io/healthy-delay":               "2026-03-20T15:20:00Z",
				"nodehealthcheck.medik8s.io/old-remediation-cr-flag": "flagon",
			},
			"labels": map[string]any{"remediation.medik8s.io/isControlPlaneNode": ""},
		},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Processing", "status": "False"},
			map[string]any{"type": "Succeeded", "status": "False"},
			map[string]any{"type": "PermanentNodeDeletionExpected", "status": "True"},
		}},
	}}
	assert.Equal(t, health.Remediation{
		Ref: corev1.ObjectReference{
			APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediation",
			Namespace: "remediators", Name: "worker-1-x7k2p", UID: "r-uid",
		},
		TemplateName:                  "reboot",
		Created:                       created,
		Deleting:                      true,
		Succeeded:                     metav1.ConditionFalse,
		PermanentNodeDeletionExpected: true,
		TimedOut:                      time.Date(2026, 3, 20, 15, 10, 5, 0, time.UTC),
		HealthyDelayStart:             time.Date(2026, 3, 20, 15, 20, 0, 0, time.UTC),
		FlaggedOld:                    true,
		ControlPlane:                  true,
	}, normalizeTimes(Summarize(r)))
	assert.Equal(t, "worker-1", TargetNode(r))
}

func TestSummarizeToleratesBadAnnotations(t *testing.T) {
	r := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name": "worker-2", "creationTimestamp": "2026-03-20T15:05:05Z",
			"annotations": map[string]any{
				"remediation.medik8s.io/nhc-timed-out": "yesterday",
				"remediation.medik8s.io/healthy-delay": "soon",
			},
		},
		"status": map[string]any{"conditions": "not a list"},
	}}
	s := normalizeTimes(Summarize(r))
	assert.Equal(t, time.Date(2026, 3, 20, 15, 5, 5, 0, time.UTC), s.TimedOut, "an unreadable time-out still counts, as of creation")
	assert.True(t, s.HealthyDelayStart.IsZero(), "an unreadable delay start restarts the delay")
	assert.Empty(t, s.Succeeded)
	assert.Equal(t, "worker-2", TargetNode(r), "legacy resources are named after their node")
}

func normalizeTimes(s health.Remediation) health.Remediation {
	for _, t := range []*time.Time{&s.Created, &s.TimedOut, &s.HealthyDelayStart} {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	return s
}
