package ha

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// twoControlPlaneNodeHealthChecks creates two NodeHealthChecks, X of the
// test remediator and Y of the cluster-scoped one, each selecting one
// control-plane node, and returns the nodes.
func twoControlPlaneNodeHealthChecks(t *testing.T, scenarioX, scenarioY string) (nodeX, nodeY string) {
	t.Helper()
	env.CreateTemplate(t, scenarioX, nil)
	fence := env.CreateClusterTemplate(t, scenarioY)
	nodeX = env.CreateNodes(t, scenarioX, 1, framework.ControlPlane)[0]
	nodeY = env.CreateNodes(t, scenarioY, 1, framework.ControlPlane)[0]
	env.CreateNHC(t, scenarioX, nil)
	env.CreateNHC(t, scenarioY, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &fence })
	return nodeX, nodeY
}

// TestOneControlPlaneNodeAtATimeAcrossAFailover is the restart's case with
// leader election: the standby that takes over has never synced.
func TestOneControlPlaneNodeAtATimeAcrossAFailover(t *testing.T) {
	const scenarioX, scenarioY = "cp-failover-x", "cp-failover-y"
	nodeX, nodeY := twoControlPlaneNodeHealthChecks(t, scenarioX, scenarioY)
	election := []string{"--node-leases=false", "--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-cp-failover",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	a, err := env.StartController("cp-failover-a", election...)
	require.NoError(t, err)
	dumpOnFailure(t, a)
	framework.Eventually(t, 20*time.Second, "a leader", func() bool { return strings.Contains(a.Log(), `"Became the leader"`) })
	b, err := env.StartController("cp-failover-b", election...)
	require.NoError(t, err)
	dumpOnFailure(t, b)
	defer func() { assert.NoError(t, b.Stop()) }()
	env.Fail(t, time.Hour, nodeY)
	framework.Eventually(t, 20*time.Second, "the remediation of the first control-plane node", func() bool {
		return len(env.ClusterRemediations(t, nodeY)) == 1
	})

	a.Kill()
	env.Fail(t, time.Hour, nodeX)
	framework.Eventually(t, 30*time.Second, "the standby to lead and sync the second NodeHealthCheck", func() bool {
		return strings.Contains(b.Log(), `"Synced" nodeHealthCheck="`+scenarioX+`"`)
	})
	assert.Empty(t, env.Remediations(t, scenarioX), "never two control-plane nodes under remediation")
	env.Recover(t, nodeY)
	framework.Eventually(t, 20*time.Second, "then the second control-plane node's remediation", func() bool {
		return len(env.ClusterRemediations(t, nodeY)) == 0 && len(env.Remediations(t, scenarioX)[nodeX]) == 1
	})
}

// TestOneControlPlaneNodeAtATimeAcrossRestarts: two NodeHealthChecks of
// different remediators each select a control-plane node. While one
// remediates its node, the controller is SIGKILLed, the other's node fails,
// and the controller starts again: however its syncs are ordered, the
// second control-plane node waits until the first one's remediation ends.
// Five rounds, since the order of the first syncs after a start varies.
func TestOneControlPlaneNodeAtATimeAcrossRestarts(t *testing.T) {
	const scenarioX, scenarioY, rounds = "cp-restart-x", "cp-restart-y", 5
	nodeX, nodeY := twoControlPlaneNodeHealthChecks(t, scenarioX, scenarioY)

	first, err := env.StartController("cp-restart-0", "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, first)
	env.Fail(t, time.Hour, nodeY)
	framework.Eventually(t, 20*time.Second, "the remediation of the first control-plane node", func() bool {
		return len(env.ClusterRemediations(t, nodeY)) == 1
	})
	first.Kill()
	env.Fail(t, time.Hour, nodeX)

	for round := 1; round <= rounds; round++ {
		name := fmt.Sprintf("cp-restart-%d", round)
		c, err := env.StartController(name, "--leader-elect=false", "--node-leases=false")
		require.NoError(t, err)
		dumpOnFailure(t, c)
		framework.Eventually(t, 20*time.Second, "a full sync of the second NodeHealthCheck after the start", func() bool {
			return strings.Contains(c.Log(), `"Synced" nodeHealthCheck="`+scenarioX+`"`)
		})
		assert.Empty(t, env.Remediations(t, scenarioX), "round %d: never two control-plane nodes under remediation", round)
		c.Kill()
		if t.Failed() {
			return
		}
	}

	last, err := env.StartController("cp-restart-last", "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, last)
	defer func() { assert.NoError(t, last.Stop()) }()
	framework.Eventually(t, 20*time.Second, "the second control-plane node to wait, and say why", func() bool {
		s := env.GetNHC(t, scenarioX).Status
		return len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 0 &&
			strings.Contains(last.Log(), `"Synced" nodeHealthCheck="`+scenarioX+`"`)
	})
	env.Recover(t, nodeY)
	framework.Eventually(t, 20*time.Second, "the first remediation to end", func() bool { return len(env.ClusterRemediations(t, nodeY)) == 0 })
	framework.Eventually(t, 20*time.Second, "then the second control-plane node's remediation", func() bool {
		return len(env.Remediations(t, scenarioX)[nodeX]) == 1
	})
}
