package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// When a storm starts, in the spec's words: storm mode "is triggered by
// number of remediation reaching minHealthy/maxUnhealthy maximum"
// (nodehealthcheck-resource.md, stormRecoveryThreshold), "when maximum
// number of remediation is reached" (How Storm Recovery Works).

// TestStormStartsWhenRemediationsReachTheMaximum: five workers, minHealthy
// 3 (at most 2 remediations), threshold 1; two nodes turn NotReady 6 s
// apart. Neither is a remediation before its condition held for its
// duration, so no storm starts until the second is remediated.
func TestStormStartsWhenRemediationsReachTheMaximum(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(3)), stormThreshold(1)), 5)
	s.setReady("node-00", corev1.ConditionFalse, 0)
	s.advance(6 * time.Second)
	s.setReady("node-01", corev1.ConditionFalse, 0)
	d := s.evaluate()
	assertStormStep(t, "both NotReady, neither unhealthy yet", s, d, stormStep{healthy: 3, unhealthy: 2})

	s.advance(conditionDuration - 6*time.Second)
	d = s.evaluate()
	assertStormStep(t, "the first remediated: 1 of at most 2", s, d, stormStep{healthy: 3, unhealthy: 2, remediated: 1, created: 1})

	s.advance(6 * time.Second)
	d = s.evaluate()
	assertStormStep(t, "the second remediated: the maximum is reached", s, d,
		stormStep{healthy: 3, unhealthy: 2, remediated: 2, created: 1, active: true, events: []string{EventStormStarted}})
}

// TestStormDoesNotStartWithoutRemediations: the budget holds back every
// node (more fail at once than it allows): none is a remediation, so the
// maximum is not reached and no storm starts; the nodes wait for the
// budget ("Wait until current remediations are below maximum").
func TestStormDoesNotStartWithoutRemediations(t *testing.T) {
	s := specStorm()
	s.fail(s.nodeNames(0, 11)...)
	d := s.evaluate()
	assertStormStep(t, "11 of 20 fail at once", s, d, stormStep{healthy: 9, unhealthy: 11})
	assert.Equal(t, WaitMinHealthy, verdictOf(d, "node-00").Waiting)
}

// TestStormNeverStartsWhilePaused: "When pauseRequests has at least one
// value set, no new remediation will be started": a paused
// NodeHealthCheck starts none, so none reaches the maximum.
func TestStormNeverStartsWhilePaused(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(3)), stormThreshold(1), paused), 5)
	s.fail("node-00", "node-01", "node-02")
	d := s.evaluate()
	assertStormStep(t, "paused", s, d, stormStep{healthy: 2, unhealthy: 3})
	assert.Equal(t, WaitPaused, verdictOf(d, "node-00").Waiting)
}

// TestStormDoesNotStartOnACreateThatFailed: the plan admits the creates
// that reach the maximum, but one is refused: the remediations that exist
// do not reach it, so no storm starts, and the refused node is tried again
// on its back-off instead of waiting for a storm that never was.
func TestStormDoesNotStartOnACreateThatFailed(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(3)), stormThreshold(1)), 5)
	s.fail("node-00", "node-01")
	d := decide(Input{NHC: s.nhc, Nodes: s.nodes, Remediations: map[string][]Remediation{}, Now: s.clock})
	assert.Len(t, d.Create, 2)
	assert.True(t, d.Storm.Starting, "the plan starts the storm on its creates")

	d.created(d.Create[0], snrRemediation("node-00", 0).Ref, s.clock)
	assert.False(t, d.StormAfter(&d.out).Active, "one of two created: no storm")
	assert.False(t, *d.Status.StormRecoveryActive)
	assert.Empty(t, stormEvents(d))

	d.created(d.Create[1], snrRemediation("node-01", 0).Ref, s.clock)
	assert.True(t, d.StormAfter(&d.out).Active, "both created: the storm starts")
	assert.True(t, *d.Status.StormRecoveryActive)
	assert.Equal(t, []string{EventStormStarted}, stormEvents(d))
}
