package e2e

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// The node watch passes a kubelet's heartbeat, which changes nothing the
// cache keeps, as a bookmark: the cached node keeps its older
// resourceVersion. A NodeHealthCheck created after the heartbeats waits,
// for its first evaluation, until the cache shows its nodes as new as the
// API server has them; it must see that the heartbeats did not change
// them, and be evaluated. A change after heartbeats is seen, and
// remediated; so is the recovery after more.
func TestANodeHealthCheckCreatedAfterHeartbeatsIsEvaluated(t *testing.T) {
	t.Parallel()
	const scenario = "heartbeats"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 4)
	env.WaitForTheCacheToShow(t, scenario, 4)
	for range 3 {
		env.Heartbeat(t, nodes...)
	}

	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: time.Second}
	})
	framework.Eventually(t, 10*time.Second, "the status to count 4 healthy nodes", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.HealthyNodes != nil && *s.HealthyNodes == 4
	})

	env.Heartbeat(t, nodes...)
	env.Fail(t, time.Minute, nodes[0])
	env.Heartbeat(t, nodes...)
	framework.Eventually(t, 10*time.Second, "the failed node remediated", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	env.Recover(t, nodes[0])
	env.Heartbeat(t, nodes...)
	framework.Eventually(t, 10*time.Second, "the remediation deleted once the node is healthy", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
	framework.Eventually(t, 5*time.Second, "the status to count 4 healthy nodes again", func() bool {
		s := env.GetNHC(t, scenario).Status
		return *s.HealthyNodes == 4 && len(s.UnhealthyNodes) == 0
	})
}
