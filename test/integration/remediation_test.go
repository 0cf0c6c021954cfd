package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestRemediationIsCreatedIdempotentlyAndDeleted(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "lifecycle", nil)
	nhc := fw.CreateNHC(t, "lifecycle", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("lifecycle"))
	})
	node := unhealthyNode(t, "lifecycle", "lifecycle-worker", corev1.ConditionFalse)

	d, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.Created, 1)
	created := remediationsOf(t, node)
	require.Len(t, created, 1)
	r := created[0]
	assert.Equal(t, "TestRemediation", r.GetKind())
	assert.Equal(t, "lifecycle-worker", r.GetName())
	assert.Equal(t, framework.RemediatorNamespace, r.GetNamespace())
	assert.Equal(t, map[string]any{"strategy": "reboot", "size": "foo"}, r.Object["spec"])
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "remediation.medik8s.io/v1alpha1", Kind: "NodeHealthCheck", Name: nhc.Name, UID: nhc.UID, Controller: ptr.To(false),
	}}, r.GetOwnerReferences())
	assert.Equal(t, map[string]string{
		"remediation.medik8s.io/node-name": "lifecycle-worker", "remediation.medik8s.io/template-name": "lifecycle",
	}, r.GetAnnotations())
	assert.Equal(t, map[string]string{"app.kubernetes.io/part-of": "node-healthcheck-controller"}, r.GetLabels())
	entry := d.Status.UnhealthyNodes[0]
	require.Len(t, entry.Remediations, 1)
	assert.Equal(t, remediation.Reference(&r), entry.Remediations[0].Resource)
	assert.Equal(t, "lifecycle", entry.Remediations[0].TemplateName)

	// A decision from a stale view creates it again: the existing one counts.
	out = env.manager.Apply(context.Background(), nhc, &d, ptr.To(env.observe(t, nhc)))
	assert.Empty(t, out.Errors)
	assert.Len(t, remediationsOf(t, node), 1)

	// A fresh view sees it and does nothing.
	d, out = env.decide(t, nhc, time.Now())
	assert.Empty(t, d.Create)
	assert.Equal(t, 1, d.Remediating)

	fw.Recover(t, node)
	_, out = env.decide(t, nhc, time.Now())
	require.Len(t, out.Deleted, 1)
	assert.Equal(t, health.DeleteNodeHealthy, out.Deleted[0].Reason)
	assert.Empty(t, remediationsOf(t, node))
}

func TestDeletionWaitsForTheRemediatorsFinalizer(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "finalizer", nil)
	nhc := fw.CreateNHC(t, "finalizer", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("finalizer"))
	})
	node := unhealthyNode(t, "finalizer", "finalizer-worker", corev1.ConditionUnknown)
	env.decide(t, nhc, time.Now())
	r := remediationsOf(t, node)[0]
	fw.SetFinalizers(t, r.GetName(), "test.medik8s.io/cleanup")

	fw.Recover(t, node)
	_, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.Deleted, 1)
	pending := remediationsOf(t, node)
	require.Len(t, pending, 1, "the finalizer keeps it")
	assert.NotNil(t, pending[0].GetDeletionTimestamp())

	d, out := env.decide(t, nhc, time.Now())
	assert.Empty(t, out.Deleted, "already being deleted")
	assert.Equal(t, health.StateRecovering, d.Nodes[0].State, "deletion pending: still under remediation")
	assert.Equal(t, 0, d.Healthy)

	fw.SetFinalizers(t, pending[0].GetName())
	framework.Eventually(t, 30*time.Second, "the resource to be gone", func() bool { return len(remediationsOf(t, node)) == 0 })
	d, _ = env.decide(t, nhc, time.Now())
	assert.Equal(t, 1, d.Healthy)
	assert.Empty(t, d.Status.UnhealthyNodes)
}

func TestEscalationWithTwoTemplatesOfOneKind(t *testing.T) {
	env := newRemediationEnv(t)
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	fw.CreateTemplate(t, "escalate-soft", multi)
	fw.CreateTemplate(t, "escalate-hard", multi)
	fw.CreateTemplate(t, "escalate-last", multi)
	nhc := fw.CreateNHC(t, "escalate", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("escalate-soft"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("escalate-hard"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("escalate-last"), Order: 3, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	node := unhealthyNode(t, "escalate", "escalate-worker", corev1.ConditionFalse)

	env.decide(t, nhc, time.Now())
	first := remediationsOf(t, node)
	require.Len(t, first, 1)
	assert.Regexp(t, "^escalate-worker-.{5}$", first[0].GetName(), "a generated name")
	assert.Equal(t, "escalate-soft", first[0].GetAnnotations()[v1alpha1.TemplateNameAnnotation])

	// The remediator gives up before the timeout: the next step starts at once.
	fw.SetRemediationCondition(t, first[0].GetName(), "Succeeded", "False")
	framework.Eventually(t, 30*time.Second, "the informer to see Succeeded=False", func() bool {
		obs := env.observe(t, nhc)
		return obs.Remediations[node][0].Succeeded == metav1.ConditionFalse
	})
	d, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.TimedOut, 1)
	assert.True(t, out.TimedOut[0].Failed)
	require.Len(t, out.Created, 1)
	assert.Equal(t, "escalate-hard", out.Created[0].Template.Name)
	annotated, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Get(context.Background(), first[0].GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	timedOut, err := time.Parse(time.RFC3339, annotated.GetAnnotations()[v1alpha1.TimedOutAnnotation])
	require.NoError(t, err, "an RFC 3339 time")
	assert.WithinDuration(t, time.Now(), timedOut, time.Minute)

	// The second one reports success, and its timeout passes: no annotation.
	second := out.Created[0].Resource
	secondObj, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Get(context.Background(), second.Name, metav1.GetOptions{})
	require.NoError(t, err)
	fw.SetRemediationCondition(t, secondObj.GetName(), "Succeeded", "True")
	framework.Eventually(t, 30*time.Second, "the informer to see Succeeded=True", func() bool {
		for _, r := range env.observe(t, nhc).Remediations[node] {
			if r.Ref.UID == second.UID {
				return r.Succeeded == metav1.ConditionTrue
			}
		}
		return false
	})
	d, out = env.decide(t, nhc, time.Now().Add(2*time.Minute))
	require.Len(t, out.TimedOut, 1)
	assert.False(t, out.TimedOut[0].Annotate)
	require.Len(t, out.Created, 1)
	assert.Equal(t, "escalate-last", out.Created[0].Template.Name)
	secondObj, err = dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Get(context.Background(), second.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, secondObj.GetAnnotations(), v1alpha1.TimedOutAnnotation)

	// The status tracks each of the three resources of one kind.
	stored := fw.GetNHC(t, nhc.Name)
	require.Len(t, stored.Status.UnhealthyNodes, 1)
	rems := stored.Status.UnhealthyNodes[0].Remediations
	require.Len(t, rems, 3)
	assert.Equal(t, []string{"escalate-soft", "escalate-hard", "escalate-last"}, []string{rems[0].TemplateName, rems[1].TemplateName, rems[2].TemplateName})
	assert.NotNil(t, rems[0].TimedOut)
	assert.NotNil(t, rems[1].TimedOut)
	assert.Nil(t, rems[2].TimedOut)
	assert.Len(t, remediationsOf(t, node), 3)
	assert.Equal(t, v1alpha1.PhaseRemediating, d.Status.Phase)

	fw.Recover(t, node)
	_, out = env.decide(t, nhc, time.Now())
	assert.Len(t, out.Deleted, 3, "all steps go when the node is healthy")
}

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
	obs := env.observe(t, nhc)
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
			"Remediation template TestRemediationTemplate remediators/absent not found"},
		{"namespaced without a namespace", corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Name: "x"}, v1alpha1.ReasonTemplateNotFound,
			`Remediation template TestRemediationTemplate "x" is namespaced, but the reference has no namespace`},
		{"a kind nobody serves", corev1.ObjectReference{APIVersion: "nowhere.example.com/v1", Kind: "GhostTemplate", Namespace: "ns", Name: "x"}, v1alpha1.ReasonTemplateNotFound,
			"Remediation template kind GhostTemplate of nowhere.example.com/v1 is not served by the API server: is its remediator installed?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nhc := fw.CreateNHC(t, "invalid", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &tc.ref })
			var obs remediation.Observation
			framework.Eventually(t, 30*time.Second, "a problem", func() bool {
				var err error
				obs, err = env.manager.Observe(nhc)
				require.NoError(t, err)
				return obs.Problem != nil
			})
			assert.Equal(t, tc.wantReason, obs.Problem.Reason)
			assert.Equal(t, tc.wantText, obs.Problem.Message)
			// The engine turns the problem into the Disabled condition and phase.
			d := health.Evaluate(health.Input{NHC: nhc, Problem: obs.Problem, Now: time.Now()})
			assert.Equal(t, v1alpha1.PhaseDisabled, d.Status.Phase)
		})
	}
}

func TestTemplateCRDInstalledAfterTheNodeHealthCheck(t *testing.T) {
	env := newRemediationEnv(t)
	late := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "LateRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: "late"}
	nhc := fw.CreateNHC(t, "late", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &late })

	obs, err := env.manager.Observe(nhc)
	require.NoError(t, err)
	require.NotNil(t, obs.Problem)
	assert.Contains(t, obs.Problem.Message, "is not served by the API server")

	require.NoError(t, cluster.InstallCRDs("test/crds/late"))
	env.mapperClock.SetTime(env.mapperClock.Now().Add(time.Minute))
	framework.Eventually(t, 30*time.Second, "the late kind to resolve", func() bool {
		obs, err = env.manager.Observe(nhc)
		require.NoError(t, err)
		return obs.Problem != nil && obs.Problem.Message == "Remediation template LateRemediationTemplate remediators/late not found"
	})

	lateGVR := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "lateremediationtemplates"}
	_, err = dynamicClient.Resource(lateGVR).Namespace(framework.RemediatorNamespace).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "LateRemediationTemplate",
		"metadata": map[string]any{"name": "late", "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	framework.Eventually(t, 30*time.Second, "the template to be found", func() bool {
		obs, err = env.manager.Observe(nhc)
		require.NoError(t, err)
		return obs.Ready && obs.Problem == nil
	})
}

func TestInformersFollowTheReferences(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "follow", nil)
	nhc := fw.CreateNHC(t, "follow", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = ptr.To(framework.TemplateRef("follow")) })
	env.observe(t, nhc)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, framework.RemediationResource}, env.informers.Running())

	clusterTemplate := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	clusterRemediation := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
	env.informers.Use("another", framework.TemplateResource, clusterTemplate, clusterRemediation)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, framework.RemediationResource, clusterTemplate, clusterRemediation}, env.informers.Running())
	framework.Eventually(t, 30*time.Second, "the new informers to sync", func() bool { return env.informers.Synced(clusterTemplate, clusterRemediation) })

	env.informers.Use(nhc.Name)
	assert.ElementsMatch(t, []schema.GroupVersionResource{framework.TemplateResource, clusterTemplate, clusterRemediation}, env.informers.Running(), "the template kind is still used by another")
	env.informers.Use("another")
	assert.Empty(t, env.informers.Running())
}

func TestClusterScopedTemplates(t *testing.T) {
	env := newRemediationEnv(t)
	clusterTemplate := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediationtemplates"}
	_, err := dynamicClient.Resource(clusterTemplate).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "ClusterRemediationTemplate",
		"metadata": map[string]any{"name": "fence"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"agent": "ipmi"}}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ref := corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "ClusterRemediationTemplate", Name: "fence"}
	nhc := fw.CreateNHC(t, "clusterscoped", func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &ref })
	unhealthyNode(t, "clusterscoped", "clusterscoped-worker", corev1.ConditionFalse)
	_, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.Created, 1)
	assert.Equal(t, "", out.Created[0].Resource.Namespace)
	assert.Equal(t, "ClusterRemediation", out.Created[0].Resource.Kind)
	clusterRemediation := schema.GroupVersionResource{Group: "test.medik8s.io", Version: "v1alpha1", Resource: "clusterremediations"}
	require.NoError(t, dynamicClient.Resource(clusterRemediation).Delete(context.Background(), "clusterscoped-worker", metav1.DeleteOptions{}))
}

func TestSomeoneElsesResourceIsLeftAlone(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "foreign", nil)
	nhc := fw.CreateNHC(t, "foreign", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("foreign"))
	})
	node := unhealthyNode(t, "foreign", "foreign-worker", corev1.ConditionFalse)
	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediation",
		"metadata": map[string]any{"name": node, "namespace": framework.RemediatorNamespace, "labels": map[string]any{"owner": "someone-else"}},
		"spec":     map[string]any{},
	}}
	_, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Create(context.Background(), theirs, metav1.CreateOptions{})
	require.NoError(t, err)

	d, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.NotOwned, 1)
	assert.Empty(t, out.Created)
	assert.Equal(t, "TestRemediation remediators/foreign-worker already exists and belongs to no NodeHealthCheck; it is left alone", out.NotOwned[0].Error())
	assert.Empty(t, d.Status.UnhealthyNodes[0].Remediations)
	stored := remediationsOf(t, node)
	require.Len(t, stored, 1)
	assert.Equal(t, "someone-else", stored[0].GetLabels()["owner"], "not overwritten")
}

func TestOrphanIsDeletedAndConfirmationRemoved(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "orphan", nil)
	nhc := fw.CreateNHC(t, "orphan", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("orphan"))
		s.HealthyDelay = &metav1.Duration{Duration: -time.Second}
	})
	gone := unhealthyNode(t, "orphan", "orphan-gone", corev1.ConditionFalse)
	kept := unhealthyNode(t, "orphan", "orphan-kept", corev1.ConditionFalse)
	env.decide(t, nhc, time.Now())
	require.Len(t, remediationsOf(t, gone), 1)
	require.Len(t, remediationsOf(t, kept), 1)

	require.NoError(t, kubeClient.CoreV1().Nodes().Delete(context.Background(), gone, metav1.DeleteOptions{}))
	fw.Recover(t, kept)
	d, out := env.decide(t, nhc, time.Now())
	require.Len(t, out.Deleted, 1)
	assert.Equal(t, health.DeleteNodeGone, out.Deleted[0].Reason)
	assert.Empty(t, remediationsOf(t, gone))
	assert.Len(t, remediationsOf(t, kept), 1, "a negative healthyDelay keeps it")
	assert.Equal(t, ptr.To(true), d.Status.UnhealthyNodes[len(d.Status.UnhealthyNodes)-1].HealthyDelayed)

	fw.UpdateNode(t, kept, func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: "yes"}
	})
	_, out = env.decide(t, nhc, time.Now())
	require.Len(t, out.Deleted, 1)
	assert.Equal(t, health.DeleteManuallyConfirmed, out.Deleted[0].Reason)
	framework.Eventually(t, 30*time.Second, "the informer to see the deletion", func() bool { return len(env.observe(t, nhc).Remediations) == 0 })
	env.decide(t, nhc, time.Now())
	stored, err := kubeClient.CoreV1().Nodes().Get(context.Background(), kept, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, stored.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation, "removed once the remediation is gone")
	_, err = kubeClient.CoreV1().Nodes().Get(context.Background(), gone, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}
