package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestTemplatesOfOneKindWithoutMultipleSupportDisable(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "single-a", nil)
	fw.CreateTemplate(t, "single-b", map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: ""})
	nhc := fw.CreateNHC(t, "single", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("single-a"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("single-b"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	obs := env.read(t, nhc.Name)
	require.NotNil(t, obs.Problem)
	assert.Equal(t, v1alpha1.ReasonTemplateInvalid, obs.Problem.Reason)
	assert.Contains(t, obs.Problem.Message, "single-a lacks the remediation.medik8s.io/multiple-templates-support annotation")
}

func TestInvalidTemplates(t *testing.T) {
	env := newRemediationEnv(t)
	noSpec := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": "no-spec", "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{}}},
	}}
	_, err := dynamicClient.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Create(context.Background(), noSpec, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dynamicClient.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Delete(context.Background(), "no-spec", metav1.DeleteOptions{})
	})
	cases := []struct {
		name       string
		ref        corev1.ObjectReference
		wantReason string
		wantText   string
	}{
		{"no spec.template.spec", framework.TemplateRef("no-spec"), v1alpha1.ReasonTemplateInvalid,
			"Remediation template TestRemediationTemplate remediators/no-spec is invalid: it has no spec.template.spec"},
		{"missing", framework.TemplateRef("absent"), v1alpha1.ReasonTemplateNotFound,
			"Remediation template TestRemediationTemplate remediators/absent not found: failed to get external remediation template remediators/absent"},
		{"namespaced without a namespace", corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Name: "x"}, v1alpha1.ReasonTemplateNotFound,
			`Remediation template TestRemediationTemplate "x" is namespaced, but no namespace is provided`},
		{"a kind nobody serves", corev1.ObjectReference{APIVersion: "nowhere.example.com/v1", Kind: "GhostTemplate", Namespace: "ns", Name: "x"}, v1alpha1.ReasonTemplateNotFound,
			"Remediation template kind GhostTemplate of nowhere.example.com/v1 is not served by the API server: is its remediator installed? (failed to get restmapping: no matches for kind \"GhostTemplate\" in version \"v1\")"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := fw.CreateNHC(t, "invalid", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &tc.ref })
			// The controller turns the problem into the Disabled condition and phase.
			out := env.sync(t, nhc.Name, time.Now())
			assert.Equal(t, v1alpha1.PhaseDisabled, out.NHC.Status.Phase)
			disabled := meta.FindStatusCondition(out.NHC.Status.Conditions, v1alpha1.ConditionDisabled)
			require.NotNil(t, disabled)
			assert.Equal(t, metav1.ConditionTrue, disabled.Status)
			assert.Equal(t, tc.wantReason, disabled.Reason)
			assert.Equal(t, tc.wantText, disabled.Message)
			assert.Equal(t, []string{"Warning Disabled [remediation] Disabling NHC. Reason: " + tc.wantReason + ", Message: " + tc.wantText}, out.events("Disabled"))
		})
	}
}

func TestTemplateCRDInstalledAfterTheNodeHealthCheck(t *testing.T) {
	env := newRemediationEnv(t)
	late := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "LateRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: "late"}
	nhc := fw.CreateNHC(t, "late", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &late })

	obs := env.readOnce(t, nhc)
	require.NotNil(t, obs.Problem)
	assert.Contains(t, obs.Problem.Message, "is not served by the API server")

	require.NoError(t, cluster.InstallCRDs("test/crds/late"))
	env.mapperClock.SetTime(env.mapperClock.Now().Add(time.Minute))
	framework.Eventually(t, 30*time.Second, "the late kind to resolve", func() bool {
		obs = env.readOnce(t, nhc)
		return obs.Problem != nil && obs.Problem.Message == "Remediation template LateRemediationTemplate remediators/late not found: failed to get external remediation template remediators/late"
	})

	lateGVR := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "lateremediationtemplates"}
	_, err := dynamicClient.Resource(lateGVR).Namespace(framework.RemediatorNamespace).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "LateRemediationTemplate",
		"metadata": map[string]any{"name": "late", "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	framework.Eventually(t, 30*time.Second, "the template to be found", func() bool {
		obs = env.readOnce(t, nhc)
		return obs.Ready && obs.Problem == nil
	})
}

func TestInformersFollowTheReferences(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "follow", nil)
	nhc := fw.CreateNHC(t, "follow", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = ptr.To(framework.TemplateRef("follow")) })
	env.read(t, nhc.Name)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, framework.RemediationResource}, env.observer.Running())

	clusterTemplate := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	clusterRemediation := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
	another := fw.CreateNHC(t, "follow-another", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("follow"), Order: 0, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Name: "fence"}, Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.read(t, another.Name)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, framework.RemediationResource, clusterTemplate, clusterRemediation}, env.observer.Running())

	env.observer.Forget(nhc.Name)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, framework.RemediationResource, clusterTemplate, clusterRemediation}, env.observer.Running(), "the kinds are still used by another")
	env.observer.Forget(another.Name)
	assert.Empty(t, env.observer.Running())
}

func TestClusterScopedTemplates(t *testing.T) {
	env := newRemediationEnv(t)
	clusterTemplate := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	clusterRemediation := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
	_, err := dynamicClient.Resource(clusterTemplate).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": "fence"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"agent": "ipmi"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dynamicClient.Resource(clusterTemplate).Delete(context.Background(), "fence", metav1.DeleteOptions{})
	})
	ref := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Name: "fence"}
	nhc := fw.CreateNHC(t, "clusterscoped", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &ref })
	node := unhealthyNode(t, "clusterscoped", "clusterscoped-worker", corev1.ConditionFalse)
	t.Cleanup(func() {
		_ = dynamicClient.Resource(clusterRemediation).Delete(context.Background(), node, metav1.DeleteOptions{})
	})

	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node clusterscoped-worker"}, out.events("RemediationCreated"))
	created, err := dynamicClient.Resource(clusterRemediation).Get(context.Background(), node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", created.GetNamespace())
	assert.Equal(t, "ClusterRemediation", created.GetKind())
	entry := entryOf(out.NHC, node)
	require.NotNil(t, entry)
	require.Len(t, entry.Remediations, 1)
	assert.Equal(t, resource.Reference(created), entry.Remediations[0].Resource)
	assert.Equal(t, "", entry.Remediations[0].Resource.Namespace)
	assert.Equal(t, "ClusterRemediation", entry.Remediations[0].Resource.Kind)
}
