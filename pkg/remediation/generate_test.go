package remediation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

var (
	testNHC = &v1alpha1.NodeHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "workers", UID: "nhc-uid"}}
	testGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediations"}
	// testTemplateGVR is the resource of testTemplate's kind.
	testTemplateGVR = schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "testremediationtemplates"}
)

func testTemplate(annotations map[string]string) *unstructured.Unstructured {
	t := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1",
		"kind":       "TestRemediationTemplate",
		"metadata":   map[string]any{"name": "reboot", "namespace": "remediators", "uid": "template-uid", "labels": map[string]any{"team": "infra"}},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"ignored": "yes"}},
			"spec":     map[string]any{"strategy": "reboot", "timeout": "5m", "extraParams": map[string]any{"foo": "bar", "importantNumber": int64(42)}},
		}},
	}}
	t.SetAnnotations(annotations)
	return t
}

func TestNewRemediationFollowsTheContract(t *testing.T) {
	template := testTemplate(nil)
	r, err := newRemediation(template, testNHC, "worker-1", false)
	require.NoError(t, err)
	want := map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1",
		"kind":       "TestRemediation",
		"metadata": map[string]any{
			"name":      "worker-1",
			"namespace": "remediators",
			"ownerReferences": []any{map[string]any{
				"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",
				"name": "workers", "uid": "nhc-uid", "controller": false,
			}},
			"annotations": map[string]any{
				"remediation.medik8s.io/node-name":     "worker-1",
				"remediation.medik8s.io/template-name": "reboot",
			},
			"labels": map[string]any{"app.kubernetes.io/part-of": "node-healthcheck-controller"},
		},
		"spec": map[string]any{"strategy": "reboot", "timeout": "5m", "extraParams": map[string]any{"foo": "bar", "importantNumber": int64(42)}},
	}
	assert.Equal(t, want, r.Object)

	r.Object["spec"].(map[string]any)["extraParams"].(map[string]any)["foo"] = "changed"
	spec, _, _ := unstructured.NestedMap(template.Object, "spec", "template", "spec", "extraParams")
	assert.Equal(t, "bar", spec["foo"], "the spec is a deep copy")
}

func TestNewRemediationForAControlPlaneNode(t *testing.T) {
	r, err := newRemediation(testTemplate(nil), testNHC, "master-0", true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/part-of":                 "node-healthcheck-controller",
		"remediation.medik8s.io/isControlPlaneNode": "",
	}, r.GetLabels())
}

func TestNewRemediationWithMultipleTemplatesSupport(t *testing.T) {
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: ""}
	r, err := newRemediation(testTemplate(multi), testNHC, "worker-1", false)
	require.NoError(t, err)
	assert.Regexp(t, "^worker-1-[0-9a-f]{10}$", r.GetName())
	assert.Empty(t, r.GetGenerateName(), "a stable name: a repeated create meets AlreadyExists")
	assert.Equal(t, "worker-1", resource.TargetNode(r), "found by its annotation")

	again, err := newRemediation(testTemplate(multi), testNHC, "worker-1", false)
	require.NoError(t, err)
	assert.Equal(t, r.GetName(), again.GetName(), "the same for the same NodeHealthCheck, template and node")
	other := testTemplate(multi)
	other.SetName("power-off")
	fromOther, err := newRemediation(other, testNHC, "worker-1", false)
	require.NoError(t, err)
	assert.NotEqual(t, r.GetName(), fromOther.GetName(), "another template, another resource")
	recreated := testNHC.DeepCopy()
	recreated.UID = "new-uid"
	ofRecreated, err := newRemediation(testTemplate(multi), recreated, "worker-1", false)
	require.NoError(t, err)
	assert.NotEqual(t, r.GetName(), ofRecreated.GetName(), "a recreated NodeHealthCheck does not meet its predecessor's resources")

	long := strings.Repeat("n", 253)
	r, err = newRemediation(testTemplate(multi), testNHC, long, false)
	require.NoError(t, err)
	assert.Len(t, r.GetName(), 253, "shortened to a valid name")
	assert.Empty(t, validation.IsDNS1123Subdomain(r.GetName()))
	assert.Equal(t, long, resource.TargetNode(r))
	sharingItsStart := strings.Repeat("n", 252) + "m"
	r2, err := newRemediation(testTemplate(multi), testNHC, sharingItsStart, false)
	require.NoError(t, err)
	assert.NotEqual(t, r.GetName(), r2.GetName(), "two long node names that share their start")
}

func TestOwnership(t *testing.T) {
	r, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	assert.True(t, resource.OwnedBy(r, testNHC))
	recreated := testNHC.DeepCopy()
	recreated.UID = "new-uid"
	assert.False(t, resource.OwnedBy(r, recreated), "a recreated NodeHealthCheck of the same name does not adopt")
	assert.Equal(t, []string{"workers"}, resource.OwnerNames(r))
}

func fakeDynamic(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{testGVR: "TestRemediationList", testTemplateGVR: "TestRemediationTemplateList"}, objects...)
}

func TestCreateIsIdempotentForOurOwnResource(t *testing.T) {
	ctx := context.Background()
	w := fakeResourceClient(fakeDynamic(), kubefake.NewClientset().CoreV1().Nodes())
	r, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	first, err := w.Create(ctx, testGVR, r.DeepCopy(), testNHC)
	require.NoError(t, err)
	again, err := w.Create(ctx, testGVR, r.DeepCopy(), testNHC)
	require.NoError(t, err, "AlreadyExists with our owner counts as created")
	assert.Equal(t, first.GetName(), again.GetName())
}

func TestCreateLeavesSomeoneElsesResourceAlone(t *testing.T) {
	ctx := context.Background()
	other := testNHC.DeepCopy()
	other.Name, other.UID = "other", "other-uid"
	theirs, err := newRemediation(testTemplate(nil), other, "worker-1", false)
	require.NoError(t, err)
	client := fakeDynamic(theirs)
	w := fakeResourceClient(client, kubefake.NewClientset().CoreV1().Nodes())

	ours, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	_, err = w.Create(ctx, testGVR, ours, testNHC)
	var notOwned *notOwnedError
	require.True(t, errors.As(err, &notOwned), "got %v", err)
	assert.Equal(t, []string{"other"}, notOwned.Owners)
	assert.Equal(t, "TestRemediation remediators/worker-1 already exists and belongs to NodeHealthCheck other; it is left alone", err.Error())
	assert.True(t, certainlyFailed(err))

	stored, err := client.Resource(testGVR).Namespace("remediators").Get(ctx, "worker-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"other"}, resource.OwnerNames(stored), "not overwritten")
}

func TestCheckKinds(t *testing.T) {
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	named := func(name string, annotations map[string]string) *unstructured.Unstructured {
		t := testTemplate(annotations)
		t.SetName(name)
		return t
	}
	assert.Nil(t, templates.CheckKinds([]*unstructured.Unstructured{named("a", multi), named("b", multi)}))
	p := templates.CheckKinds([]*unstructured.Unstructured{named("a", multi), named("b", nil)})
	require.NotNil(t, p)
	assert.Equal(t, v1alpha1.ReasonTemplateInvalid, p.Reason)
	assert.Equal(t, "Remediation templates a and b are both of kind TestRemediationTemplate, but b lacks the remediation.medik8s.io/multiple-templates-support annotation: its remediator does not support several remediations of one node", p.Message)
}
