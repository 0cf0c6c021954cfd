package faults

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestADeletedNodeHealthChecksRemediationKeepsItsNode: a NodeHealthCheck is
// deleted while its remediation of a node runs, and the resource stays (a
// remediator's finalizer keeps it while it cleans up; this control plane
// has no garbage collector at all). No other NodeHealthCheck uses its kind.
// Another NodeHealthCheck that selects the node, of another kind, starts no
// second remediation beside it; once it is gone, it remediates the node.
func TestADeletedNodeHealthChecksRemediationKeepsItsNode(t *testing.T) {
	const scenario, fencing = "leftover", "leftover-fence"
	fence := env.CreateClusterTemplate(t, fencing)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	selector := metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: scenario}}
	env.CreateNHC(t, fencing, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector, s.RemediationTemplate = selector, &fence
	})
	// Without node leases: the deleted NodeHealthCheck's lease of the node
	// would hold it until it ends, which is another rule.
	c, err := env.StartControllerWithKubeconfig(scenario, proxy.Kubeconfig, "--leader-elect=false", "--node-leases=false")
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Stop())
		if t.Failed() {
			c.DumpLog(os.Stderr)
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 20*time.Second, "the node fenced", func() bool { return len(env.ClusterRemediations(t, nodes[0])) == 1 })

	env.DeleteNHC(t, fencing)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.Selector = selector })
	framework.Eventually(t, 10*time.Second, "the other NodeHealthCheck to see the node", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.ObservedNodes != nil && *s.ObservedNodes == 3
	})
	framework.Consistently(t, 5*time.Second, "no second remediation beside the fencing", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})

	leftover := env.ClusterRemediations(t, nodes[0])[0]
	require.NoError(t, env.Dynamic.Resource(framework.ClusterRemediationResource).Delete(context.Background(), leftover.GetName(), metav1.DeleteOptions{}))
	framework.Eventually(t, 20*time.Second, "the node remediated once the fencing is gone", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
}
