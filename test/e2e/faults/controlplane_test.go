package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestAControlPlaneRemediationOfAKindNotReadYetHoldsBackAnother: NHC X (the
// test remediator) and NHC Y (the cluster-scoped one) each select a
// control-plane node. Y remediates its node; the controller is killed, X's
// node fails, and the controller starts again while the API server does not
// answer its reads of Y's remediation kind. X's kind is read, Y's is not:
// X's node must wait (Y's status records Y's remediation while its kind
// cannot be read), and then until Y's remediation ends.
func TestAControlPlaneRemediationOfAKindNotReadYetHoldsBackAnother(t *testing.T) {
	const scenarioX, scenarioY = "cp-unread-x", "cp-unread-y"
	env.CreateTemplate(t, scenarioX, nil)
	fence := env.CreateClusterTemplate(t, scenarioY)
	nodeX := env.CreateNodes(t, scenarioX, 1, framework.ControlPlane)[0]
	nodeY := env.CreateNodes(t, scenarioY, 1, framework.ControlPlane)[0]
	env.CreateNHC(t, scenarioX, nil)
	env.CreateNHC(t, scenarioY, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &fence })

	first, err := env.StartControllerWithKubeconfig(scenarioX+"-first", proxy.Kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	env.Fail(t, time.Hour, nodeY)
	framework.Eventually(t, 20*time.Second, "the first control-plane node's remediation", func() bool { return len(env.ClusterRemediations(t, nodeY)) == 1 })
	first.Kill()

	proxy.HoldReads("/"+framework.ClusterRemediationResource.Resource, true)
	t.Cleanup(func() { proxy.HoldReads("/"+framework.ClusterRemediationResource.Resource, false) })
	env.Fail(t, time.Hour, nodeX)
	startController(t, scenarioX+"-second")
	framework.Eventually(t, 20*time.Second, "the second control-plane node to wait, and say why", func() bool {
		for _, e := range env.Events(t, scenarioX) {
			if e.Reason == "RemediationSkipped" && strings.Contains(e.Message, "for preventing control plane / etcd quorum loss") {
				return true
			}
		}
		return false
	})
	assert.Empty(t, env.Remediations(t, scenarioX), "never two control-plane nodes under remediation")

	proxy.HoldReads("/"+framework.ClusterRemediationResource.Resource, false)
	framework.Consistently(t, 3*time.Second, "still one at a time once every kind is read", func() bool {
		return len(env.Remediations(t, scenarioX)) == 0
	})
	env.Recover(t, nodeY)
	framework.Eventually(t, 20*time.Second, "then the second control-plane node's turn", func() bool {
		return len(env.ClusterRemediations(t, nodeY)) == 0 && len(env.Remediations(t, scenarioX)[nodeX]) == 1
	})
}
