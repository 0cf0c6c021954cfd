package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// A NodeHealthCheck created a moment after its nodes, while the node watch
// lags behind the API server, is evaluated on all of them: 17 of 20 nodes
// are healthy, minHealthy is 11, so its 3 failed nodes are remediated and no
// storm starts. Evaluated on the 8 nodes the cache showed (3 failed, 5
// healthy), a storm would start, and with 3 unhealthy nodes above its
// threshold of 2 never end: no node would be remediated.
func TestANodeHealthCheckCreatedWhileTheNodeCacheLagsSeesAllItsNodes(t *testing.T) {
	const scenario = "lagging-cache"
	startController(t, scenario)
	env.CreateTemplate(t, scenario, nil)
	var failed, nodes []string
	for i := range 8 {
		name := fmt.Sprintf("%s-%02d", scenario, i)
		env.CreateNode(t, scenario, name)
		nodes = append(nodes, name)
	}
	failed = nodes[:3]
	env.Fail(t, time.Hour, failed...)
	env.WaitForTheCacheToShow(t, scenario, 8)

	proxy.HoldNodeWatches(true)
	t.Cleanup(func() { proxy.HoldNodeWatches(false) })
	for i := 8; i < 20; i++ {
		name := fmt.Sprintf("%s-%02d", scenario, i)
		env.CreateNode(t, scenario, name)
		nodes = append(nodes, name)
	}
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromInt32(11))
		s.StormRecoveryThreshold = ptr.To[int32](2)
	})
	framework.Consistently(t, 2*time.Second, "no status, and no storm, from part of its nodes", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.ObservedNodes == nil && meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionStormActive) == nil
	})
	proxy.HoldNodeWatches(false)

	// The status is written after the creates: wait for both.
	framework.Eventually(t, 15*time.Second, "the 3 failed nodes remediated, and the status says so", func() bool {
		return len(env.Remediations(t, scenario)) == 3 && len(env.GetNHC(t, scenario).Status.UnhealthyNodes) == 3
	})
	s := env.GetNHC(t, scenario).Status
	assert.Equal(t, int32(20), *s.ObservedNodes)
	assert.Equal(t, int32(17), *s.HealthyNodes)
	assert.Nil(t, meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionStormActive), "no storm condition: no storm ever was")
	assert.Equal(t, false, ptr.Deref(s.StormRecoveryActive, true))
	for _, e := range env.Events(t, scenario) {
		assert.NotEqual(t, "StormRecoveryStarted", e.Reason)
	}
}
