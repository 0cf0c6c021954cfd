package kinds

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// withTemplate is a template of testTemplateGVR in namespace remediators
// whose spec.template.spec holds a string of size bytes.
func withTemplate(name string, size int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"fill": strings.Repeat("x", size)}}},
	}}
	u.SetAPIVersion(testTemplateGVR.GroupVersion().String())
	u.SetKind("TestRemediationTemplate")
	u.SetNamespace("remediators")
	u.SetName(name)
	u.SetUID("template-uid")
	u.SetAnnotations(map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true", "note": strings.Repeat("n", 4096)})
	u.SetLabels(map[string]string{"team": "infra"})
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
	return u
}

// Keep keeps what the controller reads and nothing else: whatever size an
// object has, what is kept of it is small, but for the spec.template of a
// named template within the limit.
func TestKeep(t *testing.T) {
	owned := testRemediation("worker-0", true)
	owned.Object["spec"] = map[string]any{"fill": strings.Repeat("x", 1<<20)}
	owned.Object["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": v1alpha1.SucceededCondition, "status": "True", "message": strings.Repeat("m", 1<<16)},
		map[string]any{"type": "Other", "status": "True"},
	}}
	owned.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(100, 0)})
	owned.SetAnnotations(map[string]string{v1alpha1.NodeNameAnnotation: "worker-0", v1alpha1.TimedOutAnnotation: strings.Repeat("t", 4096), "other": "x"})

	kept := Keep(owned, false).(*unstructured.Unstructured)
	assert.Equal(t, resource.Summarize(owned).Succeeded, resource.Summarize(kept).Succeeded)
	assert.Equal(t, map[string]string{v1alpha1.NodeNameAnnotation: "worker-0"}, kept.GetAnnotations(), "a value too long for any of ours is dropped")
	assert.Equal(t, resource.OwnerUIDs(owned), resource.OwnerUIDs(kept))
	assert.True(t, resource.ForControlPlaneNode(kept))
	assert.Equal(t, owned.GetDeletionTimestamp(), kept.GetDeletionTimestamp())
	assert.NotContains(t, kept.Object, "spec")
	assert.Less(t, encodedSize(kept.Object), 1024)

	unrelated := withTemplate("other", 1<<20)
	assert.Equal(t, &shell{namespace: "remediators", name: "other", uid: "template-uid"}, Keep(unrelated, false),
		"an object of no NodeHealthCheck's is a metadata shell")

	named := Keep(withTemplate("reboot", 1000), true).(*unstructured.Unstructured)
	state, _ := KeptTemplate(named)
	assert.Equal(t, TemplateKept, state)
	spec, err := templateSpecOf(named)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 1000), spec["fill"])
	assert.Equal(t, map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}, named.GetAnnotations())
	assert.Empty(t, named.GetManagedFields())

	large := Keep(withTemplate("large", MaxTemplateBytes), true).(*unstructured.Unstructured)
	state, size := KeptTemplate(large)
	assert.Equal(t, TemplateTooLarge, state, "over the limit with its JSON")
	assert.Greater(t, size, MaxTemplateBytes)
	assert.NotContains(t, large.Object, "spec")
}

func templateSpecOf(u *unstructured.Unstructured) (map[string]any, error) {
	spec, _, err := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	return spec, err
}

// A template cached before any NodeHealthCheck named it says so, from its
// cache as from its shell: it must be read whole.
func TestATemplateCachedUnnamedIsNotKept(t *testing.T) {
	owned := withTemplate("reboot", 10)
	owned.SetOwnerReferences(testRemediation("x", false).GetOwnerReferences())
	state, _ := KeptTemplate(Keep(owned, false).(*unstructured.Unstructured))
	assert.Equal(t, TemplateNotKept, state)
	state, _ = KeptTemplate(Keep(withTemplate("reboot", 10), false).(*shell).unstructured())
	assert.Equal(t, TemplateNotKept, state)
}

// An informer that reads a kind whole (for its remediation resources)
// keeps a named template whole and any other object of its kind as a
// shell.
func TestTheInformersKeepNamedTemplatesAlone(t *testing.T) {
	client := fakeDynamic(withTemplate("reboot", 100), withTemplate("unrelated", 100))
	informers := New(t.Context(), client, client, clocktesting.NewFakeClock(time.Now()))
	informers.Use("workers", Kinds{Remediations: []schema.GroupVersionResource{testTemplateGVR},
		Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Namespace: "remediators", Name: "reboot"}, Kind: "TestRemediationTemplate"}}})
	require.Eventually(t, func() bool { return informers.State(testTemplateGVR).Synced }, 10*time.Second, 10*time.Millisecond)

	reboot := informers.Get(testTemplateGVR, "remediators", "reboot")
	require.NotNil(t, reboot)
	state, _ := KeptTemplate(reboot)
	assert.Equal(t, TemplateKept, state)
	spec, err := templateSpecOf(reboot)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 100), spec["fill"])

	unrelated := informers.Get(testTemplateGVR, "remediators", "unrelated")
	require.NotNil(t, unrelated)
	state, _ = KeptTemplate(unrelated)
	assert.Equal(t, TemplateNotKept, state)
}

// What is kept, kept again, is the same: an informer may pass an object it
// transformed through its transform again.
func TestKeepingTwiceKeepsTheSame(t *testing.T) {
	for _, u := range []*unstructured.Unstructured{withTemplate("large", MaxTemplateBytes), withTemplate("small", 10), testRemediation("worker-0", true)} {
		once := Keep(u, true).(*unstructured.Unstructured)
		assert.Equal(t, once, Keep(once.DeepCopy(), true), u.GetName())
	}
}

// A kind used for templates alone is listed and watched for its metadata:
// a named template keeps its kind and version, and is read whole with GET;
// any other object is a shell.
func TestATemplateKindIsWatchedForItsMetadata(t *testing.T) {
	client := fakeDynamic(withTemplate("reboot", 100), withTemplate("unrelated", 100))
	informers := New(t.Context(), client, client, clocktesting.NewFakeClock(time.Now()))
	informers.Use("workers", Kinds{Templates: []NamedTemplate{{Ref: TemplateRef{Resource: testTemplateGVR, Namespace: "remediators", Name: "reboot"}, Kind: "TestRemediationTemplate"}}})
	require.Eventually(t, func() bool { return informers.State(testTemplateGVR).Synced }, 10*time.Second, 10*time.Millisecond)

	reboot := informers.Get(testTemplateGVR, "remediators", "reboot")
	require.NotNil(t, reboot)
	state, _ := KeptTemplate(reboot)
	assert.Equal(t, TemplateNotKept, state)
	assert.Equal(t, testTemplateGVR.GroupVersion().WithKind("TestRemediationTemplate"), reboot.GroupVersionKind())
	assert.NotContains(t, reboot.Object, "spec")

	unrelated, _, _ := informers.informer(testTemplateGVR).informer.GetIndexer().GetByKey("remediators/unrelated")
	_, isShell := unrelated.(*shell)
	assert.True(t, isShell, "an unnamed template is a shell")
}
