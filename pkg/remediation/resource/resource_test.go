package resource

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
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

// The readers read metadata in place; the object's getters, which copy it,
// are the reference: for any object of the wire's names, both read the same.
func TestReadersReadAsTheGetters(t *testing.T) {
	for seed := range uint64(2000) {
		u := drawn(t, rand.New(rand.NewPCG(seed, 0)))
		if seed%3 == 0 {
			// A null annotation reads as "", as the getter has it.
			annotations, _ := u.Object["metadata"].(map[string]any)["annotations"].(map[string]any)
			for key := range annotations {
				annotations[key] = nil
				break
			}
		}
		annotations := u.GetAnnotations()
		wantNode := annotations[v1alpha1.NodeNameAnnotation]
		if wantNode == "" {
			wantNode = u.GetName()
		}
		var wantOwners []Owner
		for _, ref := range u.GetOwnerReferences() {
			gv, err := schema.ParseGroupVersion(ref.APIVersion)
			if err == nil && ref.Kind == "NodeHealthCheck" && gv.Group == "remediation.medik8s.io" {
				wantOwners = append(wantOwners, Owner{Name: ref.Name, UID: ref.UID})
			}
		}
		_, wantControlPlane := u.GetLabels()[v1alpha1.ControlPlaneNodeLabel]
		assert.Equal(t, wantNode, TargetNode(u), "seed %d", seed)
		assert.Equal(t, wantOwners, Owners(u), "seed %d", seed)
		assert.Equal(t, wantControlPlane, ForControlPlaneNode(u), "seed %d", seed)
		assert.Equal(t, normalizeTimes(summarizeByGetters(u)), normalizeTimes(Summarize(u)), "seed %d", seed)
		for _, owner := range wantOwners {
			assert.True(t, OwnedBy(u, &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{UID: owner.UID}}), "seed %d", seed)
		}
		assert.False(t, OwnedBy(u, &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{UID: "no-such-owner"}}), "seed %d", seed)
	}
}

// summarizeByGetters is Summarize read through the object's getters.
func summarizeByGetters(r *unstructured.Unstructured) health.Remediation {
	annotations := r.GetAnnotations()
	at := func(key string, ifInvalid time.Time) time.Time {
		value, ok := annotations[key]
		if !ok {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return ifInvalid
		}
		return t
	}
	_, flaggedOld := annotations[v1alpha1.OldRemediationAnnotation]
	_, controlPlane := r.GetLabels()[v1alpha1.ControlPlaneNodeLabel]
	created := r.GetCreationTimestamp().Time
	s := health.Remediation{
		Ref: Reference(r), TemplateName: annotations[v1alpha1.TemplateNameAnnotation], Created: created,
		Deleting: r.GetDeletionTimestamp() != nil, HealthyDelayStart: at(v1alpha1.HealthyDelayAnnotation, time.Time{}),
		FlaggedOld: flaggedOld, ControlPlane: controlPlane, TimedOut: at(v1alpha1.TimedOutAnnotation, created),
	}
	conditions, _, _ := unstructured.NestedSlice(r.Object, "status", "conditions")
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if !ok {
			continue
		}
		status, _ := condition["status"].(string)
		switch condition["type"] {
		case v1alpha1.SucceededCondition:
			s.Succeeded = metav1.ConditionStatus(status)
		case v1alpha1.PermanentNodeDeletionExpectedCondition:
			s.PermanentNodeDeletionExpected = status == string(metav1.ConditionTrue)
		}
	}
	return s
}
