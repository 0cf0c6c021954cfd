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
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestRemediationIsCreatedIdempotentlyAndDeleted(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "lifecycle", nil)
	nhc := fw.CreateNHC(t, "lifecycle", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("lifecycle"))
	})
	node := unhealthyNode(t, "lifecycle", "lifecycle-worker", corev1.ConditionFalse)
	// A view taken before the resource exists.
	staleNHC := fw.GetNHC(t, nhc.Name)
	staleObs := env.read(t, nhc.Name)
	staleNodes := selectedNodes(t, staleNHC)

	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node lifecycle-worker"}, out.events("RemediationCreated"))
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
	require.Len(t, out.NHC.Status.UnhealthyNodes, 1)
	entry := out.NHC.Status.UnhealthyNodes[0]
	assert.Equal(t, node, entry.Name)
	require.Len(t, entry.Remediations, 1)
	assert.Equal(t, resource.Reference(&r), entry.Remediations[0].Resource)
	assert.Equal(t, "lifecycle", entry.Remediations[0].TemplateName)

	// A decision from a stale view creates it again: the existing one counts.
	stale := health.Evaluate(health.Input{NHC: staleNHC, Nodes: staleNodes, Remediations: staleObs.Remediations, Now: time.Now()})
	require.Len(t, stale.Create, 1, "the stale view has no resource for the node")
	replayed, err := env.writer.Create(env.ctx, staleNHC, stale.Create[0], staleObs.watched)
	require.NoError(t, err)
	assert.Equal(t, r.GetUID(), replayed.Resource.UID, "the existing one")
	assert.Len(t, remediationsOf(t, node), 1)

	// A fresh view sees it and does nothing.
	out = env.sync(t, nhc.Name, time.Now())
	assert.Empty(t, out.events("RemediationCreated"))
	still := remediationsOf(t, node)
	require.Len(t, still, 1, "no new resource")
	assert.Equal(t, r.GetUID(), still[0].GetUID())
	assert.Equal(t, ptr.To(int32(1)), out.NHC.Status.RemediatingNodes)

	// The node is healthy again: its resource goes.
	fw.Recover(t, node)
	out = env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name lifecycle-worker"}, out.events("RemediationRemoved"))
	assert.Empty(t, remediationsOf(t, node))
}

func TestDeletionWaitsForTheRemediatorsFinalizer(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "finalizer", nil)
	nhc := fw.CreateNHC(t, "finalizer", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("finalizer"))
	})
	node := unhealthyNode(t, "finalizer", "finalizer-worker", corev1.ConditionUnknown)
	env.sync(t, nhc.Name, time.Now())
	created := remediationsOf(t, node)
	require.Len(t, created, 1)
	fw.SetFinalizers(t, created[0].GetName(), "test.medik8s.io/cleanup")

	fw.Recover(t, node)
	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name finalizer-worker"}, out.events("RemediationRemoved"))
	pending := remediationsOf(t, node)
	require.Len(t, pending, 1, "the finalizer keeps it")
	assert.NotNil(t, pending[0].GetDeletionTimestamp())

	out = env.sync(t, nhc.Name, time.Now())
	assert.Empty(t, out.events("RemediationRemoved"), "already being deleted")
	assert.Equal(t, ptr.To(int32(0)), out.NHC.Status.HealthyNodes, "deletion pending: still under remediation")
	entry := entryOf(out.NHC, node)
	require.NotNil(t, entry, "deletion pending: still listed")
	assert.NotNil(t, entry.ConditionsHealthyTimestamp, "healthy, and recovering")
	require.Len(t, entry.Remediations, 1)
	assert.Equal(t, pending[0].GetUID(), entry.Remediations[0].Resource.UID)

	fw.SetFinalizers(t, pending[0].GetName())
	framework.Eventually(t, 30*time.Second, "the resource to be gone", func() bool { return len(remediationsOf(t, node)) == 0 })
	out = env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, ptr.To(int32(1)), out.NHC.Status.HealthyNodes)
	assert.Empty(t, out.NHC.Status.UnhealthyNodes)
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

	env.sync(t, nhc.Name, time.Now())
	first := remediationsOf(t, node)
	require.Len(t, first, 1)
	assert.Regexp(t, "^escalate-worker-[0-9a-f]{10}$", first[0].GetName(), "a stable name per template")
	assert.Equal(t, "escalate-soft", first[0].GetAnnotations()[v1alpha1.TemplateNameAnnotation])

	// The remediator gives up before the timeout: the next step starts at once.
	fw.SetRemediationCondition(t, first[0].GetName(), "Succeeded", "False")
	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Warning RemediationTimedOut [remediation] Remediation TestRemediation " + first[0].GetName() +
		" of node escalate-worker timed out: its remediator reported Succeeded=False"}, out.events("RemediationTimedOut"))
	assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node escalate-worker"}, out.events("RemediationCreated"))
	second := newResource(t, node, first...)
	assert.Equal(t, "escalate-hard", second.GetAnnotations()[v1alpha1.TemplateNameAnnotation])
	annotated := remediationNamed(t, first[0].GetName())
	timedOut, err := time.Parse(time.RFC3339, annotated.GetAnnotations()[v1alpha1.TimedOutAnnotation])
	require.NoError(t, err, "an RFC 3339 time")
	assert.WithinDuration(t, time.Now(), timedOut, time.Minute)

	// The second one reports success, and its timeout passes: no annotation.
	fw.SetRemediationCondition(t, second.GetName(), "Succeeded", "True")
	out = env.sync(t, nhc.Name, time.Now().Add(2*time.Minute))
	assert.Equal(t, []string{"Warning RemediationTimedOut [remediation] Remediation TestRemediation " + second.GetName() +
		" of node escalate-worker timed out: its timeout passed"}, out.events("RemediationTimedOut"))
	assert.Equal(t, []string{"Normal RemediationCreated [remediation] Created remediation object for node escalate-worker"}, out.events("RemediationCreated"))
	last := newResource(t, node, first[0], *second)
	assert.Equal(t, "escalate-last", last.GetAnnotations()[v1alpha1.TemplateNameAnnotation])
	assert.NotContains(t, remediationNamed(t, second.GetName()).GetAnnotations(), v1alpha1.TimedOutAnnotation)

	// The status tracks each of the three resources of one kind.
	require.Len(t, out.NHC.Status.UnhealthyNodes, 1)
	rems := out.NHC.Status.UnhealthyNodes[0].Remediations
	require.Len(t, rems, 3)
	assert.Equal(t, []string{"escalate-soft", "escalate-hard", "escalate-last"}, []string{rems[0].TemplateName, rems[1].TemplateName, rems[2].TemplateName})
	assert.NotNil(t, rems[0].TimedOut)
	assert.NotNil(t, rems[1].TimedOut)
	assert.Nil(t, rems[2].TimedOut)
	assert.Len(t, remediationsOf(t, node), 3)
	assert.Equal(t, v1alpha1.PhaseRemediating, out.NHC.Status.Phase)

	fw.Recover(t, node)
	out = env.sync(t, nhc.Name, time.Now().Add(2*time.Minute))
	assert.ElementsMatch(t, []string{
		"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name " + first[0].GetName(),
		"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name " + second.GetName(),
		"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name " + last.GetName(),
	}, out.events("RemediationRemoved"), "all steps go when the node is healthy")
	assert.Empty(t, remediationsOf(t, node))
}

// newResource returns the one TestRemediation of a node, as the API server
// has it, that is none of the known ones.
func newResource(t *testing.T, node string, known ...unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	all := remediationsOf(t, node)
	require.Len(t, all, len(known)+1)
	for i := range all {
		isKnown := false
		for _, k := range known {
			isKnown = isKnown || k.GetUID() == all[i].GetUID()
		}
		if !isKnown {
			return &all[i]
		}
	}
	require.FailNow(t, "no new resource", "node %s", node)
	return nil
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
	t.Cleanup(func() {
		_ = dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Delete(context.Background(), node, metav1.DeleteOptions{})
	})

	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Warning RemediationSkipped [remediation] Skipped remediation: TestRemediation remediators/foreign-worker already exists and belongs to no NodeHealthCheck; it is left alone"},
		out.events("RemediationSkipped"))
	assert.Empty(t, out.events("RemediationCreated"))
	entry := entryOf(out.NHC, node)
	require.NotNil(t, entry)
	assert.Empty(t, entry.Remediations)
	stored := remediationsOf(t, node)
	require.Len(t, stored, 1)
	assert.Equal(t, "someone-else", stored[0].GetLabels()["owner"], "not overwritten")
	assert.Empty(t, stored[0].GetOwnerReferences(), "not taken over")
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
	// The first create goes alone, its status written before the next.
	env.sync(t, nhc.Name, time.Now())
	env.sync(t, nhc.Name, time.Now())
	require.Len(t, remediationsOf(t, gone), 1)
	require.Len(t, remediationsOf(t, kept), 1)

	// The node is gone: its resource goes, while the negative healthyDelay
	// keeps the recovered node's.
	require.NoError(t, kubeClient.CoreV1().Nodes().Delete(context.Background(), gone, metav1.DeleteOptions{}))
	fw.Recover(t, kept)
	out := env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name orphan-gone"}, out.events("RemediationRemoved"))
	assert.Empty(t, remediationsOf(t, gone))
	assert.Len(t, remediationsOf(t, kept), 1, "a negative healthyDelay keeps it")
	keptEntry := entryOf(out.NHC, kept)
	require.NotNil(t, keptEntry)
	assert.Equal(t, ptr.To(true), keptEntry.HealthyDelayed)

	// A manual confirmation releases it.
	fw.UpdateNode(t, kept, func(n *corev1.Node) {
		n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: "yes"}
	})
	out = env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []string{"Normal RemediationRemoved [remediation] Deleted remediation CR of kind TestRemediation with name orphan-kept"}, out.events("RemediationRemoved"))
	assert.Empty(t, remediationsOf(t, kept))
	// "NHC will delete the ... annotation from the Node, and proceed with
	// deleting the remediation CR": the recovery it confirms consumes it.
	confirmed, err := kubeClient.CoreV1().Nodes().Get(context.Background(), kept, metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, confirmed.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation, "removed by the sync that deleted on it")
	_, err = kubeClient.CoreV1().Nodes().Get(context.Background(), gone, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

// A delete tells whether the resource went at once, from the API server's
// answer: one no finalizer holds is gone, and a sync that deleted only such
// resources may leave its status to the sync their watch events wake; one
// its remediator's finalizer holds is not.
func TestADeleteTellsWhetherTheResourceWentAtOnce(t *testing.T) {
	env := newRemediationEnv(t)
	fw.CreateTemplate(t, "gone", nil)
	nhc := fw.CreateNHC(t, "gone", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef("gone"))
	})
	nodes := []string{
		unhealthyNode(t, "gone", "gone-plain", corev1.ConditionFalse),
		unhealthyNode(t, "gone", "gone-finalized", corev1.ConditionFalse),
	}
	// The first create goes alone, until the status shows it.
	framework.Eventually(t, 30*time.Second, "both remediated", func() bool {
		env.sync(t, nhc.Name, time.Now())
		return len(remediationsOf(t, nodes[0])) == 1 && len(remediationsOf(t, nodes[1])) == 1
	})
	refs := map[string]corev1.ObjectReference{}
	for _, node := range nodes {
		created := remediationsOf(t, node)
		require.Len(t, created, 1)
		refs[node] = resource.Reference(&created[0])
	}
	fw.SetFinalizers(t, refs["gone-finalized"].Name, "test.medik8s.io/cleanup")
	t.Cleanup(func() { fw.SetFinalizers(t, refs["gone-finalized"].Name) })

	obs := env.read(t, nhc.Name)
	for node, want := range map[string]bool{"gone-plain": true, "gone-finalized": false} {
		gone, err := env.writer.Delete(env.ctx, nhc.Name, obs.watched, health.Deletion{Node: node, Resource: refs[node], Reason: health.DeleteNodeHealthy})
		require.NoError(t, err)
		assert.Equal(t, want, gone, node)
	}
	assert.Empty(t, remediationsOf(t, "gone-plain"))
	held := remediationsOf(t, "gone-finalized")
	require.Len(t, held, 1)
	assert.NotNil(t, held[0].GetDeletionTimestamp())

	gone, err := env.writer.Delete(env.ctx, nhc.Name, obs.watched, health.Deletion{Node: "gone-plain", Resource: refs["gone-plain"], Reason: health.DeleteNodeHealthy})
	require.NoError(t, err, "a resource gone already counts as deleted")
	assert.True(t, gone)
}
