package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestAntiLoopRule(t *testing.T) {
	t.Parallel()
	const scenario = "anti-loop"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: 5 * time.Second}
	})
	env.SetCondition(t, nodes[0], corev1.NodeReady, corev1.ConditionUnknown, time.Hour)
	framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return remediated(t, scenario)[nodes[0]] })

	// During the reboot Ready goes Unknown → False: the new condition has
	// not held for its 5s, yet the remediation stays and the node is not healthy.
	env.SetCondition(t, nodes[0], corev1.NodeReady, corev1.ConditionFalse, 0)
	framework.Consistently(t, 4*time.Second, "the remediation kept", func() bool { return remediated(t, scenario)[nodes[0]] })
	s := statusOf(t, scenario)
	assert.Equal(t, int32(1), *s.HealthyNodes)
	assert.Len(t, env.Remediations(t, scenario)[nodes[0]], 1, "and not a second one")

	env.Recover(t, nodes[0])
	framework.Eventually(t, 5*time.Second, "its deletion once Ready", func() bool { return len(remediated(t, scenario)) == 0 })
}

func TestNodeDeletionCleansUpItsRemediation(t *testing.T) {
	t.Parallel()
	const scenario = "node-deletion"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0], nodes[1])
	framework.Eventually(t, 10*time.Second, "two remediations", func() bool { return len(remediated(t, scenario)) == 2 })

	// A remediator that deletes nodes keeps its resource until it succeeds.
	deleting := env.Remediations(t, scenario)[nodes[1]][0]
	env.SetRemediationCondition(t, deleting.GetName(), v1alpha1.PermanentNodeDeletionExpectedCondition, "True")
	for _, n := range nodes[:2] {
		require.NoError(t, env.Kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}))
	}
	framework.Eventually(t, 5*time.Second, "the plain orphan to be deleted", func() bool { return !remediated(t, scenario)[nodes[0]] })
	framework.Consistently(t, 2*time.Second, "the resource expecting node deletion kept", func() bool { return remediated(t, scenario)[nodes[1]] })
	env.SetRemediationCondition(t, deleting.GetName(), v1alpha1.SucceededCondition, "True")
	framework.Eventually(t, 5*time.Second, "its deletion once it succeeded", func() bool { return len(remediated(t, scenario)) == 0 })
	framework.Eventually(t, 5*time.Second, "a clean status", func() bool {
		s := statusOf(t, scenario)
		return len(s.UnhealthyNodes) == 0 && *s.ObservedNodes == 1
	})
}

func TestRemediatorFinalizerIsRespected(t *testing.T) {
	t.Parallel()
	const scenario = "finalizer"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return remediated(t, scenario)[nodes[0]] })
	name := env.Remediations(t, scenario)[nodes[0]][0].GetName()
	env.SetFinalizers(t, name, "test.medik8s.io/cleanup")

	env.Recover(t, nodes[0])
	framework.Eventually(t, 5*time.Second, "a deletion timestamp", func() bool {
		r := env.Remediations(t, scenario)[nodes[0]]
		return len(r) == 1 && r[0].GetDeletionTimestamp() != nil
	})
	framework.Consistently(t, 2*time.Second, "the node still under remediation", func() bool {
		s := statusOf(t, scenario)
		return *s.HealthyNodes == 1 && s.Phase == v1alpha1.PhaseRemediating
	})
	env.SetFinalizers(t, name)
	framework.Eventually(t, 5*time.Second, "the node healthy once the finalizer is gone", func() bool {
		s := statusOf(t, scenario)
		return *s.HealthyNodes == 2 && s.Phase == v1alpha1.PhaseEnabled && len(s.UnhealthyNodes) == 0
	})
}

func TestStormRecoverySpecExample(t *testing.T) {
	t.Parallel()
	const scenario = "storm"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 20)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromInt32(11))
		s.StormRecoveryThreshold = ptr.To[int32](5)
	})
	expect := func(step string, healthy, remediatedNodes int, active bool) {
		t.Helper()
		framework.Eventually(t, 10*time.Second, step, func() bool {
			s := statusOf(t, scenario)
			return s.HealthyNodes != nil && int(*s.HealthyNodes) == healthy && len(remediated(t, scenario)) == remediatedNodes &&
				s.StormRecoveryActive != nil && *s.StormRecoveryActive == active
		})
	}
	expect("normal operation", 20, 0, false)
	env.Fail(t, time.Hour, nodes[:9]...)
	expect("storm hits: 11 healthy, 9 remediations, storm recovery starts", 11, 9, true)
	assert.NotNil(t, statusOf(t, scenario).StormRecoveryStartTime)

	env.Fail(t, time.Hour, nodes[9:11]...)
	expect("more failures: 9 healthy, still 9 remediations", 9, 9, true)
	framework.Consistently(t, 2*time.Second, "the 2 new failures wait", func() bool { return len(remediated(t, scenario)) == 9 })

	env.Recover(t, nodes[:6]...)
	expect("stabilized: 15 healthy, 5 unhealthy, storm recovery ends and the 2 waiting nodes get theirs", 15, 5, false)
	assert.Nil(t, statusOf(t, scenario).StormRecoveryStartTime)

	env.Recover(t, nodes[6:11]...)
	expect("all healthy", 20, 0, false)
	reasons := map[string]int{}
	for _, e := range env.Events(t, scenario) {
		reasons[e.Reason] += int(e.Count)
	}
	assert.Equal(t, 1, reasons["StormRecoveryStarted"])
	assert.Equal(t, 1, reasons["StormRecoveryEnded"])
}
