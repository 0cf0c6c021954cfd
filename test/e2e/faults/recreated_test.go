package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestANodeHealthCheckCreatedAgainUnseenIsSynced: while the controller's
// watch of NodeHealthChecks is silent, the operator deletes a
// NodeHealthCheck that selects no node and creates it again, under the same
// name, selecting the scenario's nodes; etcd compacts past the watch, and
// the informer lists again. The old and the new object reach the handlers
// as one update, both at generation 1. The new one is synced, and
// remediates its failed node.
func TestANodeHealthCheckCreatedAgainUnseenIsSynced(t *testing.T) {
	const scenario = "created-again-unseen"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	elsewhere := func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: "nowhere"}}
	}
	env.CreateNHC(t, scenario, elsewhere)
	startController(t, scenario)
	framework.Eventually(t, 10*time.Second, "the controller to sync the first NodeHealthCheck", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.ObservedNodes != nil && *s.ObservedNodes == 0
	})

	proxy.HoldWatches("nodehealthchecks", true)
	t.Cleanup(func() { proxy.HoldWatches("nodehealthchecks", false) })
	env.DeleteNHC(t, scenario)
	again := env.CreateNHC(t, scenario, nil)
	env.Fail(t, 0, nodes[0])
	proxy.ExpireWatches("nodehealthchecks")

	framework.Eventually(t, 20*time.Second, "the node remediated by the NodeHealthCheck created again", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	assert.Equal(t, again.UID, env.GetNHC(t, scenario).UID)
	// The status is recorded after the create it reports.
	framework.Eventually(t, 10*time.Second, "its status to count the nodes it selects", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.ObservedNodes != nil && *s.ObservedNodes == 3
	})
}
