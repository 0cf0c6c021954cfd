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

// An object of no NodeHealthCheck's is a metadata shell, whatever it
// holds; one a NodeHealthCheck owns or names is what resource.Keep keeps.
func TestKeep(t *testing.T) {
	assert.Equal(t, &shell{namespace: "remediators", name: "other", uid: "template-uid"}, Keep(withTemplate("other", 1<<20), false))
	owned := testRemediation("worker-0", true)
	assert.Equal(t, resource.Keep(owned, false), Keep(owned, false))
	named := withTemplate("reboot", 10)
	assert.Equal(t, resource.Keep(named, true), Keep(named, true))
}

// A template cached before any NodeHealthCheck named it says so, from its
// cache as from its shell: it must be read whole.
func TestATemplateCachedUnnamedIsNotKept(t *testing.T) {
	owned := withTemplate("reboot", 10)
	owned.SetOwnerReferences(testRemediation("x", false).GetOwnerReferences())
	state, _ := resource.KeptTemplate(Keep(owned, false).(*unstructured.Unstructured))
	assert.Equal(t, resource.TemplateNotKept, state)
	state, _ = resource.KeptTemplate(Keep(withTemplate("reboot", 10), false).(*shell).unstructured())
	assert.Equal(t, resource.TemplateNotKept, state)
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
	state, _ := resource.KeptTemplate(reboot)
	assert.Equal(t, resource.TemplateKept, state)
	spec, err := resource.TemplateSpec(reboot)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 100), spec["fill"])

	unrelated := informers.Get(testTemplateGVR, "remediators", "unrelated")
	require.NotNil(t, unrelated)
	state, _ = resource.KeptTemplate(unrelated)
	assert.Equal(t, resource.TemplateNotKept, state)
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
	state, _ := resource.KeptTemplate(reboot)
	assert.Equal(t, resource.TemplateNotKept, state)
	assert.Equal(t, testTemplateGVR.GroupVersion().WithKind("TestRemediationTemplate"), reboot.GroupVersionKind())
	assert.NotContains(t, reboot.Object, "spec")

	unrelated, _, _ := informers.informer(testTemplateGVR).informer.GetIndexer().GetByKey("remediators/unrelated")
	_, isShell := unrelated.(*shell)
	assert.True(t, isShell, "an unnamed template is a shell")
}
