package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// stormStep checks one step of a storm scenario.
type stormStep struct {
	healthy, unhealthy, remediated int
	created                        int
	active                         bool
	events                         []string
}

func assertStormStep(t *testing.T, step string, s *simulation, d result, want stormStep) {
	t.Helper()
	assert.Equal(t, want.healthy, d.Healthy, "%s: healthy", step)
	assert.Equal(t, want.unhealthy, d.Observed-d.Healthy, "%s: unhealthy", step)
	assert.Equal(t, want.created, len(d.Create), "%s: created", step)
	assert.Equal(t, want.remediated, s.remediated(), "%s: nodes with a remediation", step)
	assert.Equal(t, want.active, d.Storm.Active, "%s: storm active", step)
	assert.Equal(t, want.events, stormEvents(d), "%s: storm events", step)
	if s.nhc.Spec.StormRecoveryThreshold != nil {
		require.NotNil(t, d.Status.StormRecoveryActive, step)
		assert.Equal(t, want.active, *d.Status.StormRecoveryActive, "%s: status.stormRecoveryActive", step)
		assert.Equal(t, want.active, d.Status.StormRecoveryStartTime != nil, "%s: status.stormRecoveryStartTime", step)
	}
}

func stormEvents(d result) []string {
	var reasons []string
	for _, e := range d.EventsAfter(&d.out) {
		switch e.Reason {
		case EventStormStarted, EventStormCooldown, EventStormEnded:
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// specStorm is the spec's example: 20 nodes, minHealthy 11, threshold 5.
func specStorm() *simulation {
	return newSimulation(testNHC(minHealthy(intstr.FromInt32(11)), stormThreshold(5)), 20)
}

func TestStormRecoverySpecExample(t *testing.T) {
	s := specStorm()
	s.evaluate()

	s.fail(s.nodeNames(0, 5)...)
	d := s.evaluate()
	assertStormStep(t, "normal operation", s, d, stormStep{healthy: 15, unhealthy: 5, remediated: 5, created: 5})

	s.fail(s.nodeNames(5, 9)...)
	d = s.evaluate()
	assertStormStep(t, "storm hits", s, d, stormStep{healthy: 11, unhealthy: 9, remediated: 9, created: 4, active: true, events: []string{EventStormStarted}})
	c := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormActive)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, metav1.NewTime(now), *d.Status.StormRecoveryStartTime)

	s.advance(time.Minute)
	s.fail(s.nodeNames(9, 11)...)
	d = s.evaluate()
	assertStormStep(t, "additional failures", s, d, stormStep{healthy: 9, unhealthy: 11, remediated: 9, active: true})
	assert.Equal(t, WaitMinHealthy, verdictOf(d, "node-09").Waiting, "the budget holds it back first")
	assert.Equal(t, metav1.NewTime(now), *d.Status.StormRecoveryStartTime, "the start does not move")

	// 6 of the 9 remediated nodes recover: 15 healthy, 5 unhealthy, 3 of them remediated.
	s.advance(time.Minute)
	s.recover(s.nodeNames(0, 6)...)
	d = s.evaluate()
	assertStormStep(t, "recovered nodes are cleaned up", s, d, stormStep{healthy: 9, unhealthy: 11, remediated: 3, active: true})
	d = s.evaluate()
	assertStormStep(t, "system stabilizes: storm ends, the 2 waiting nodes get remediations", s, d,
		stormStep{healthy: 15, unhealthy: 5, remediated: 5, created: 2, events: []string{EventStormEnded}})
	assert.Equal(t, []string{"node-09", "node-10"}, createdNodes(d))
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormActive).Status)

	s.recover(s.nodeNames(6, 11)...)
	s.evaluate()
	d = s.evaluate()
	assertStormStep(t, "final recovery", s, d, stormStep{healthy: 20, unhealthy: 0, remediated: 0})
	assert.Equal(t, v1alpha1.PhaseEnabled, d.Status.Phase)
}

func TestStormRecoverySpecRiskScenario(t *testing.T) {
	s := specStorm()
	s.fail(s.nodeNames(0, 9)...)
	d := s.evaluate()
	assertStormStep(t, "storm hits", s, d, stormStep{healthy: 11, unhealthy: 9, remediated: 9, created: 9, active: true, events: []string{EventStormStarted}})

	s.fail(s.nodeNames(9, 15)...)
	d = s.evaluate()
	assertStormStep(t, "continuous failures", s, d, stormStep{healthy: 5, unhealthy: 15, remediated: 9, active: true})

	// The 9 remediations succeed; 6 nodes still wait.
	s.recover(s.nodeNames(0, 9)...)
	s.evaluate()
	d = s.evaluate()
	assertStormStep(t, "remediations recovered, storm stays", s, d, stormStep{healthy: 14, unhealthy: 6, remediated: 0, active: true})
	assert.Equal(t, WaitStorm, verdictOf(d, "node-09").Waiting, "the budget would allow it; storm recovery does not")
	assert.True(t, d.Budget.Allowed)
	assert.Contains(t, d.Status.Reason, "6 for storm recovery to end")

	s.advance(24 * time.Hour)
	d = s.evaluate()
	assertStormStep(t, "a day later", s, d, stormStep{healthy: 14, unhealthy: 6, remediated: 0, active: true})
}

func TestStormEndsWithoutMatchingNodes(t *testing.T) {
	// Upstream's storm conditions stick when no node matches any more
	// (reference §2.15 #4).
	s := specStorm()
	s.fail(s.nodeNames(0, 9)...)
	s.evaluate()
	s.recover(s.nodeNames(0, 9)...)
	s.evaluate()
	d := s.evaluate()
	assertStormStep(t, "all recovered", s, d, stormStep{healthy: 20, remediated: 0, events: []string{EventStormEnded}})
}

// upstreamStorm is upstream's envtest scenario: minHealthy 4, cooldown 2s,
// 3 unhealthy and 4 healthy nodes (reference §7.6).
func TestStormCooldownUpstreamScenario(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(4)), stormCooldown(2*time.Second)), 7)
	s.fail("node-00", "node-01", "node-02")
	d := s.evaluate()
	assertStormStep(t, "phase 1", s, d, stormStep{healthy: 4, unhealthy: 3, remediated: 3, created: 3})
	assert.Nil(t, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormActive), "no storm condition before the first storm")
	assert.Nil(t, d.Status.StormRecoveryActive, "the spec's fields belong to stormRecoveryThreshold")

	s.fail("node-03")
	d = s.evaluate()
	assertStormStep(t, "phase 2: 3 healthy < 4", s, d, stormStep{healthy: 3, unhealthy: 4, remediated: 3, active: true, events: []string{EventStormStarted}})

	s.recover("node-00")
	s.evaluate()
	d = s.evaluate()
	assertStormStep(t, "phase 3: cooldown starts", s, d, stormStep{healthy: 4, unhealthy: 3, remediated: 2, active: true, events: []string{EventStormCooldown}})
	cooldown := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormCooldownActive)
	require.NotNil(t, cooldown)
	assert.Equal(t, metav1.ConditionTrue, cooldown.Status)
	t1 := cooldown.LastTransitionTime
	assert.Equal(t, s.clock.Add(2*time.Second), d.NextDeadline)

	s.advance(time.Second)
	s.fail("node-04")
	d = s.evaluate()
	assertStormStep(t, "phase 4: a failure cancels the cooldown", s, d, stormStep{healthy: 3, unhealthy: 4, remediated: 2, active: true})
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormCooldownActive).Status)

	s.advance(time.Second)
	s.recover("node-01")
	s.evaluate()
	d = s.evaluate()
	assertStormStep(t, "phase 5: the cooldown starts again", s, d, stormStep{healthy: 4, unhealthy: 3, remediated: 1, active: true, events: []string{EventStormCooldown}})
	t2 := meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormCooldownActive).LastTransitionTime
	assert.True(t, t2.After(t1.Time))

	s.advance(2*time.Second - time.Nanosecond)
	d = s.evaluate()
	assertStormStep(t, "just before the cooldown ends", s, d, stormStep{healthy: 4, unhealthy: 3, remediated: 1, active: true})

	s.advance(time.Nanosecond)
	d = s.evaluate()
	assertStormStep(t, "the cooldown ends: the waiting nodes are remediated at once", s, d,
		stormStep{healthy: 4, unhealthy: 3, remediated: 3, created: 2, events: []string{EventStormEnded}})
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormCooldownActive).Status)
}

func TestStormThresholdAndCooldownMustBothHold(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(11)), stormThreshold(5), stormCooldown(time.Minute)), 20)
	s.fail(s.nodeNames(0, 9)...)
	d := s.evaluate()
	assertStormStep(t, "storm", s, d, stormStep{healthy: 11, unhealthy: 9, remediated: 9, created: 9, active: true, events: []string{EventStormStarted}})
	s.fail(s.nodeNames(9, 11)...)
	d = s.evaluate()
	assertStormStep(t, "two more wait", s, d, stormStep{healthy: 9, unhealthy: 11, remediated: 9, active: true})

	s.recover(s.nodeNames(0, 6)...)
	s.evaluate()
	d = s.evaluate()
	assertStormStep(t, "threshold reached: cooldown starts", s, d, stormStep{healthy: 15, unhealthy: 5, remediated: 3, active: true, events: []string{EventStormCooldown}})
	assert.Equal(t, s.clock.Add(time.Minute), d.Storm.CooldownEnds)

	s.advance(time.Minute)
	d = s.evaluate()
	assertStormStep(t, "cooldown over", s, d, stormStep{healthy: 15, unhealthy: 5, remediated: 5, created: 2, events: []string{EventStormEnded}})
}

func TestStormRecoveryNeedsMoreUnhealthyNodesThanTheThreshold(t *testing.T) {
	// A threshold above observed-minHealthy: at the limit, storm recovery
	// could end and start again on every evaluation. It does not start.
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(11)), stormThreshold(9)), 20)
	s.fail(s.nodeNames(0, 9)...)
	d := s.evaluate()
	assertStormStep(t, "at the limit", s, d, stormStep{healthy: 11, unhealthy: 9, remediated: 9, created: 9})
	d = s.evaluate()
	assertStormStep(t, "again", s, d, stormStep{healthy: 11, unhealthy: 9, remediated: 9})
}

func TestStormSettingRemovedEndsTheStorm(t *testing.T) {
	s := specStorm()
	s.fail(s.nodeNames(0, 9)...)
	s.evaluate()
	s.nhc.Spec.StormRecoveryThreshold = nil
	d := s.evaluate()
	assert.False(t, d.Storm.Active)
	assert.Equal(t, []string{EventStormEnded}, stormEvents(d))
	assert.Nil(t, d.Status.StormRecoveryActive)
	assert.Nil(t, meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionStormActive))
}
