package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func historyNHC(t *testing.T, scenario string) *v1alpha1.NodeHealthCheck {
	fw.CreateTemplate(t, scenario, nil)
	return fw.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = ptr.To(framework.TemplateRef(scenario))
	})
}

func TestHistoryBoundHoldsAfterManyCycles(t *testing.T) {
	env := newRemediationEnv(t)
	const scenario = "history-bound"
	nhc := historyNHC(t, scenario)
	const cycles = v1alpha1.MaxRemediationHistory + 3
	nodes := fw.CreateNodes(t, scenario, cycles)
	now := time.Now()
	step := func() time.Time { now = now.Add(time.Minute); return now }
	for i, node := range nodes {
		fw.Fail(t, time.Hour, node)
		out := env.sync(t, nhc.Name, step())
		require.Len(t, remediationsOf(t, node), 1, "cycle %d", i)
		require.Equal(t, node, out.NHC.Status.RemediationHistory[0].TargetName, "the ongoing one is listed first")
		fw.Recover(t, node)
		env.sync(t, nhc.Name, step())
		require.Empty(t, remediationsOf(t, node))
		env.sync(t, nhc.Name, step())
	}
	history := fw.GetNHC(t, nhc.Name).Status.RemediationHistory
	require.Len(t, history, v1alpha1.MaxRemediationHistory)
	for i, r := range history {
		assert.Equal(t, nodes[cycles-1-i], r.TargetName, "newest first; the oldest %d are dropped", cycles-v1alpha1.MaxRemediationHistory)
		assert.Equal(t, v1alpha1.OutcomeRecovered, r.Outcome)
		assert.NotNil(t, r.Finished)
	}
}

func TestHistoryIsRebuiltAfterALostStatusWrite(t *testing.T) {
	env := newRemediationEnv(t)
	const scenario = "history-lost"
	nhc := historyNHC(t, scenario)
	node := unhealthyNode(t, scenario, "history-lost-worker", corev1.ConditionUnknown)
	out := env.sync(t, nhc.Name, time.Now())
	require.Len(t, out.NHC.Status.RemediationHistory, 1)
	want := out.NHC.Status.RemediationHistory[0]
	resource := remediationsOf(t, node)[0]
	assert.Equal(t, resource.GetCreationTimestamp(), want.Started)

	// The write that recorded it is lost: a status without the history.
	lost := out.NHC.DeepCopy()
	lost.Status.RemediationHistory = nil
	_, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().UpdateStatus(context.Background(), lost, metav1.UpdateOptions{})
	require.NoError(t, err)
	out = env.sync(t, nhc.Name, time.Now())
	assert.Equal(t, []v1alpha1.RemediationRecord{want}, out.NHC.Status.RemediationHistory, "the same record, from the cluster")
}

func TestHistoryOfADeletedNode(t *testing.T) {
	env := newRemediationEnv(t)
	const scenario = "history-deleted"
	nhc := historyNHC(t, scenario)
	node := unhealthyNode(t, scenario, "history-deleted-worker", corev1.ConditionFalse)
	env.sync(t, nhc.Name, time.Now())
	require.Len(t, remediationsOf(t, node), 1)

	require.NoError(t, kubeClient.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}))
	deletedAt := time.Now().Add(time.Minute)
	env.sync(t, nhc.Name, deletedAt)
	require.Empty(t, remediationsOf(t, node), "the orphan's resource is deleted")
	// It went at once: the sync its deletion's event wakes writes the
	// status, the node fenced and its incident over, both when it went.
	out := env.sync(t, nhc.Name, deletedAt)
	r := out.NHC.Status.RemediationHistory[0]
	assert.Equal(t, v1alpha1.OutcomeNodeDeleted, r.Outcome)
	require.NotNil(t, r.Fenced, "a deleted node is fenced")
	assert.Equal(t, deletedAt.Unix(), r.Fenced.Unix())
	require.NotNil(t, r.Finished)
	assert.Equal(t, deletedAt.Unix(), r.Finished.Unix())
}

func TestHistoryOfANodeNoLongerSelected(t *testing.T) {
	env := newRemediationEnv(t)
	const scenario = "history-deselected"
	nhc := historyNHC(t, scenario)
	node := unhealthyNode(t, scenario, "history-deselected-worker", corev1.ConditionFalse)
	env.sync(t, nhc.Name, time.Now())
	require.Len(t, remediationsOf(t, node), 1)

	fw.UpdateNode(t, node, func(n *corev1.Node) { n.Labels[framework.ScenarioLabel] = "elsewhere" })
	env.sync(t, nhc.Name, time.Now())
	out := env.sync(t, nhc.Name, time.Now())
	r := out.NHC.Status.RemediationHistory[0]
	assert.Equal(t, v1alpha1.OutcomeCancelled, r.Outcome)
	assert.Nil(t, r.Fenced)
	assert.NotNil(t, r.Finished)
	assert.Len(t, out.NHC.Status.RemediationHistory, 1)
}
