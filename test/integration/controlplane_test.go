package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestAnEscalationWaitsForAnotherControlPlaneNodesRemediation: a
// control-plane node escalates (soft, then hard) under one NodeHealthCheck;
// an operator deletes its resources, so that the node's soft step is on
// record as timed out but the node is under no resource (out of the busy
// set). Another control-plane node, under another NodeHealthCheck, starts
// its remediation meanwhile. The first node's next step waits for it: never
// two control-plane nodes at once.
func TestAnEscalationWaitsForAnotherControlPlaneNodesRemediation(t *testing.T) {
	env := newRemediationEnv(t)
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	fw.CreateTemplate(t, "cp-escalate-soft", multi)
	fw.CreateTemplate(t, "cp-escalate-hard", multi)
	fw.CreateTemplate(t, "cp-other", nil)
	escalating := fw.CreateNHC(t, "cp-escalate", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("cp-escalate-soft"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("cp-escalate-hard"), Order: 2, Timeout: metav1.Duration{Duration: time.Hour}},
		}
	})
	other := fw.CreateNHC(t, "cp-other", nil)
	a := fw.CreateNode(t, escalating.Name, "cp-escalate-a", framework.ControlPlane).Name
	b := fw.CreateNode(t, other.Name, "cp-other-b", framework.ControlPlane).Name
	fw.Fail(t, time.Hour, a)

	start := time.Now()
	env.sync(t, escalating.Name, start)
	require.Len(t, remediationsOf(t, a), 1, "the soft step")
	out := env.sync(t, escalating.Name, start.Add(2*time.Minute))
	require.Len(t, out.events("RemediationTimedOut"), 1)
	require.Len(t, remediationsOf(t, a), 2, "the hard step")

	// An operator deletes the node's resources: its soft step stays on
	// record as timed out, and its hard step, within its timeout, is due
	// again on its first clock, while the node is under no resource.
	deleteResourcesOf(t, a)

	// Another control-plane node's remediation starts, and the in-process
	// reservation of its create has lapsed: only the busy set stands.
	fw.Fail(t, time.Hour, b)
	out = env.sync(t, other.Name, start.Add(4*time.Minute))
	require.Len(t, out.events("RemediationCreated"), 1, "the other control-plane node")
	env.mapperClock.SetTime(env.mapperClock.Now().Add(2 * time.Minute))

	out = env.sync(t, escalating.Name, start.Add(5*time.Minute))
	assert.Empty(t, out.events("RemediationCreated"), "the hard step waits")
	assert.Empty(t, remediationsOf(t, a), "one control-plane node at a time")
	assert.Contains(t, out.events("RemediationSkipped"),
		"Warning RemediationSkipped [remediation] Skipping remediation of "+a+" for preventing control plane / etcd quorum loss, going to retry in a minute")
	assert.Contains(t, out.NHC.Status.Reason, "1 for another control-plane node's remediation")

	// The other node recovers: the hard step goes.
	fw.Recover(t, b)
	env.sync(t, other.Name, start.Add(6*time.Minute))
	framework.Eventually(t, 30*time.Second, "the other remediation to be gone", func() bool { return len(remediationsOf(t, b)) == 0 })
	out = env.sync(t, escalating.Name, start.Add(7*time.Minute))
	assert.Len(t, out.events("RemediationCreated"), 1)
	assert.Len(t, remediationsOf(t, a), 1)
}

// deleteResourcesOf deletes the TestRemediations of nodes, as an operator
// would, and waits until they are gone.
func deleteResourcesOf(t *testing.T, nodes ...string) {
	t.Helper()
	for _, node := range nodes {
		for _, r := range remediationsOf(t, node) {
			_ = dynamicClient.Resource(framework.RemediationResource).Namespace(r.GetNamespace()).Delete(context.Background(), r.GetName(), metav1.DeleteOptions{})
		}
	}
	framework.Eventually(t, 30*time.Second, "the remediations to be gone", func() bool {
		for _, node := range nodes {
			if len(remediationsOf(t, node)) > 0 {
				return false
			}
		}
		return true
	})
}
