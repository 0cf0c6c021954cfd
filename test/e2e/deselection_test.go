package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestASelectedAgainNodeStartsAnewIncident: a node the NodeHealthCheck no
// longer selects is released, its incident ended; its remediator, which
// expects to delete the node, keeps its resource. Selected again while
// still unhealthy, the node neither takes up the old step on the old clock
// (which would escalate at once) nor counts its healthyDelay from the
// deselection, and the history keeps the ended incident apart.
func TestASelectedAgainNodeStartsAnewIncident(t *testing.T) {
	t.Parallel()
	const scenario = "reselected"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	for _, name := range []string{"reselected-first", "reselected-second"} {
		env.CreateTemplate(t, name, multi)
	}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		// A minute is the least timeout the API accepts.
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("reselected-first"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("reselected-second"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
		s.HealthyDelay = &metav1.Duration{Duration: time.Hour}
	})
	node := nodes[0]
	resources := func() []unstructured.Unstructured { return env.Remediations(t, scenario)[node] }

	env.Fail(t, time.Hour, node)
	framework.Eventually(t, 10*time.Second, "the first step", func() bool { return len(resources()) == 1 })
	first := resources()[0]
	require.Equal(t, "reselected-first", first.GetAnnotations()[v1alpha1.TemplateNameAnnotation])
	started := first.GetCreationTimestamp()

	// The remediator expects to delete the node: its resource is kept when
	// orphaned, until it reports Succeeded=True.
	env.SetRemediationCondition(t, first.GetName(), v1alpha1.PermanentNodeDeletionExpectedCondition, "True")
	time.Sleep(time.Second) // for the controller's cache to see the condition before the deselection

	deselected := time.Now()
	env.UpdateNode(t, node, func(n *corev1.Node) { delete(n.Labels, framework.ScenarioLabel) })
	// "Cancelled (deselected)" (docs/decisions.md, Outcomes).
	framework.Eventually(t, 10*time.Second, "the incident's record finished, Cancelled", func() bool {
		h := historyOf(t, scenario, node)
		return len(h) == 1 && h[0].Finished != nil && h[0].Outcome == v1alpha1.OutcomeCancelled
	})
	framework.Consistently(t, 2*time.Second, "the resource of a remediator that expects the node's deletion kept", func() bool {
		r := resources()
		return len(r) == 1 && r[0].GetUID() == first.GetUID() && r[0].GetDeletionTimestamp() == nil
	})

	// Past step 1's timeout, the node is selected again, still unhealthy.
	time.Sleep(time.Until(started.Add(65 * time.Second)))
	reselected := time.Now()
	env.UpdateNode(t, node, func(n *corev1.Node) { n.Labels = map[string]string{framework.ScenarioLabel: scenario} })
	// The old resource is of no later incident: the node waits for it to
	// go, and the ended incident's step does not time out into this one.
	framework.Eventually(t, 10*time.Second, "the node to wait for the old resource's deletion", func() bool {
		return strings.Contains(statusOf(t, scenario).Reason, "for their remediation's deletion")
	})
	framework.Consistently(t, 20*time.Second, "neither a time-out of the old step nor a second step", func() bool {
		r := resources()
		if len(r) != 1 || r[0].GetUID() != first.GetUID() {
			return false
		}
		_, timedOut := r[0].GetAnnotations()[v1alpha1.TimedOutAnnotation]
		return !timedOut
	})

	// healthyDelay is "the time before NHC would allow a node to be healthy
	// again", counted "after it first reports healthy": from now, not from
	// the deselection.
	recovered := time.Now().Truncate(time.Second)
	env.Recover(t, node)
	framework.Eventually(t, 5*time.Second, "healthyDelayed in the status", func() bool { return healthyDelayed(t, scenario, node) })
	framework.Eventually(t, 5*time.Second, "the healthy delay's start on the resource", func() bool {
		r := resources()
		return len(r) == 1 && r[0].GetAnnotations()[v1alpha1.HealthyDelayAnnotation] != ""
	})
	since, err := time.Parse(time.RFC3339, resources()[0].GetAnnotations()[v1alpha1.HealthyDelayAnnotation])
	require.NoError(t, err)
	assert.False(t, since.Before(recovered), "the delay starts when the node reported healthy (%v), not at the deselection (%v): %v", recovered, deselected, since)
	framework.Consistently(t, 3*time.Second, "the resource kept during the delay", func() bool {
		r := resources()
		return len(r) == 1 && r[0].GetUID() == first.GetUID() && r[0].GetDeletionTimestamp() == nil
	})

	// One record per incident: the ended incident's resource opens no
	// record of its own, and joins none.
	h := historyOf(t, scenario, node)
	require.Len(t, h, 1)
	assert.Equal(t, v1alpha1.OutcomeCancelled, h[0].Outcome)
	require.NotNil(t, h[0].Finished)
	assert.True(t, h[0].Finished.Before(&metav1.Time{Time: reselected}), "finished at the deselection: %v", h[0].Finished)
	assert.False(t, h[0].Finished.Time.Before(deselected.Truncate(time.Second)), "finished at the deselection: %v", h[0].Finished)
	require.Len(t, h[0].Steps, 1)
	assert.Equal(t, "reselected-first", h[0].Steps[0].TemplateName)
	assert.Nil(t, h[0].Steps[0].TimedOut)
}
