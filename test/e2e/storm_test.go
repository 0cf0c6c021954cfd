package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// When storm recovery starts, in the spec's words (nodehealthcheck-resource.md):
// storm mode "is triggered by number of remediation reaching
// minHealthy/maxUnhealthy maximum" (stormRecoveryThreshold); "If (Maximum
// number of remediation is reached AND stormRecoveryThreshold configured):
// → Enter storm recovery mode" (How Storm Recovery Works). In a real storm
// nodes fail seconds apart, and a node whose condition has not held for its
// duration yet is not healthy, but no remediation either.

// stormWatch reads a NodeHealthCheck's status and checks on every read that
// its storm never starts before the nodes under remediation reach the
// budget's maximum: the status counts them (remediatingNodes) in the same
// write that starts the storm.
type stormWatch struct {
	scenario string
	maximum  int32
	started  bool
	// last is the last status read, told when the test fails.
	last string
}

func newStormWatch(t *testing.T, scenario string, maximum int32) *stormWatch {
	w := &stormWatch{scenario: scenario, maximum: maximum}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last status read: %s", w.last)
		}
	})
	return w
}

func (w *stormWatch) status(t *testing.T) v1alpha1.NodeHealthCheckStatus {
	t.Helper()
	s := statusOf(t, w.scenario)
	w.last = fmt.Sprintf("observed %d, healthy %d, remediating %d, stormRecoveryActive %v, stormRecoveryStartTime %v, reason %q",
		ptr.Deref(s.ObservedNodes, -1), ptr.Deref(s.HealthyNodes, -1), ptr.Deref(s.RemediatingNodes, -1),
		ptr.Deref(s.StormRecoveryActive, false), s.StormRecoveryStartTime, s.Reason)
	if stormActive(s) && !w.started {
		require.GreaterOrEqual(t, ptr.Deref(s.RemediatingNodes, 0), w.maximum,
			"storm recovery started with %d nodes under remediation, before the maximum of %d was reached (healthy %d of %d)",
			ptr.Deref(s.RemediatingNodes, 0), w.maximum, ptr.Deref(s.HealthyNodes, 0), ptr.Deref(s.ObservedNodes, 0))
		w.started = true
	}
	return s
}

// stormActive tells whether the status shows storm recovery, in either of
// the ways it says so.
func stormActive(s v1alpha1.NodeHealthCheckStatus) bool {
	return ptr.Deref(s.StormRecoveryActive, false) || meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionStormActive)
}

// eventCount counts the events of a reason recorded on a NodeHealthCheck:
// on this one, not on one of the same name before it (go test -count).
func eventCount(t *testing.T, nhc *v1alpha1.NodeHealthCheck, reason string) int {
	n := 0
	for _, e := range env.Events(t, nhc.Name) {
		if e.Reason == reason && e.InvolvedObject.UID == nhc.UID {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// failNow makes a node Ready=False as of now, and returns when its
// condition will have held for a duration: the time is stored in whole
// seconds, and the controller counts from the stored one.
func failNow(t *testing.T, node string, duration time.Duration) time.Time {
	n := env.SetCondition(t, node, corev1.NodeReady, corev1.ConditionFalse, 0)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Add(duration)
		}
	}
	require.FailNow(t, "no Ready condition on "+node)
	return time.Time{}
}

func sameNodes(remediated map[string]bool, want []string) bool {
	if len(remediated) != len(want) {
		return false
	}
	for _, n := range want {
		if !remediated[n] {
			return false
		}
	}
	return true
}

// TestStormStartsOnlyWhenRemediationsReachTheBudget: five workers,
// minHealthy 3 (at most 2 remediations), stormRecoveryThreshold 1; two
// nodes turn NotReady 6 s apart. Once both are NotReady only 3 nodes are
// healthy, yet neither is a remediation before its 20 s passed: the storm
// waits for the second remediation, and both nodes get theirs.
func TestStormStartsOnlyWhenRemediationsReachTheBudget(t *testing.T) {
	t.Parallel()
	const scenario = "storm-budget"
	const notReadyFor = 20 * time.Second
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 5)
	nhc := env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromInt32(3))
		s.StormRecoveryThreshold = ptr.To[int32](1)
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: notReadyFor}},
		}
	})
	watch := newStormWatch(t, scenario, 2)
	framework.Eventually(t, 10*time.Second, "5 healthy nodes", func() bool {
		s := watch.status(t)
		return ptr.Deref(s.ObservedNodes, 0) == 5 && ptr.Deref(s.HealthyNodes, 0) == 5
	})
	noStorm := func() bool {
		return !stormActive(watch.status(t)) && eventCount(t, nhc, health.EventStormStarted) == 0
	}

	firstDue := failNow(t, nodes[0], notReadyFor)
	time.Sleep(6 * time.Second)
	secondDue := failNow(t, nodes[1], notReadyFor)
	// "healthyNodes: The number of observed healthy nodes": 3, the most
	// the budget leaves, while no node is a remediation yet.
	framework.Eventually(t, 5*time.Second, "3 healthy nodes", func() bool { return ptr.Deref(watch.status(t).HealthyNodes, 0) == 3 })
	framework.Consistently(t, time.Until(firstDue.Add(-time.Second)), "no storm and no remediation before the first node's 20 s", func() bool {
		return noStorm() && len(remediated(t, scenario)) == 0
	})

	framework.Eventually(t, time.Until(firstDue.Add(15*time.Second)), "the first node's remediation", func() bool {
		watch.status(t)
		return sameNodes(remediated(t, scenario), nodes[:1])
	})
	created := env.Remediations(t, scenario)[nodes[0]][0].GetCreationTimestamp()
	assert.False(t, created.Time.Before(firstDue), "remediated at %v, before its condition held for 20 s (%v)", created, firstDue)
	framework.Consistently(t, time.Until(secondDue.Add(-time.Second)), "no storm with 1 remediation of at most 2", func() bool {
		return noStorm() && sameNodes(remediated(t, scenario), nodes[:1])
	})

	framework.Eventually(t, time.Until(secondDue.Add(15*time.Second)), "the second node's remediation, and then the storm", func() bool {
		s := watch.status(t)
		return sameNodes(remediated(t, scenario), nodes[:2]) && ptr.Deref(s.StormRecoveryActive, false) &&
			meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionStormActive) && s.StormRecoveryStartTime != nil
	})
	framework.Eventually(t, 10*time.Second, "the StormRecoveryStarted event", func() bool {
		return eventCount(t, nhc, health.EventStormStarted) == 1
	})

	// "Exit storm recovery when (unhealthyNodes ≤ stormRecoveryThreshold)".
	env.Recover(t, nodes[:2]...)
	framework.Eventually(t, 10*time.Second, "the storm's end once the nodes recover", func() bool {
		s := watch.status(t)
		return !stormActive(s) && len(remediated(t, scenario)) == 0 && eventCount(t, nhc, health.EventStormEnded) == 1
	})
}

// TestStormSpecExampleWithStaggeredFailures walks the spec's example
// ("Real-World Example" and "Example State Transitions": 20 nodes,
// minHealthy=11, stormRecoveryThreshold=5) with failures that come one
// node at a time, as a storm comes, each remediated 3 s after it failed.
func TestStormSpecExampleWithStaggeredFailures(t *testing.T) {
	t.Parallel()
	const scenario = "storm-staggered"
	const notReadyFor = 3 * time.Second
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 20)
	nhc := env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromInt32(11))
		s.StormRecoveryThreshold = ptr.To[int32](5)
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: notReadyFor}},
		}
	})
	// 20 - minHealthy: the most remediations the budget allows at once.
	watch := newStormWatch(t, scenario, 9)
	framework.Eventually(t, 10*time.Second, "20 healthy nodes", func() bool {
		s := watch.status(t)
		return ptr.Deref(s.ObservedNodes, 0) == 20 && ptr.Deref(s.HealthyNodes, 0) == 20
	})

	steps := []struct {
		what          string
		fail, recover []string
		healthy       int32
		remediated    []string
		storm         bool
		// reason is part of status.reason: why nodes wait.
		reason string
		// event is recorded once, at this step.
		event string
	}{
		{what: "Normal operation: 15 healthy, 5 unhealthy → 5 remediations created",
			fail: nodes[0:5], healthy: 15, remediated: nodes[0:5]},
		{what: "Storm hits: 11 healthy, 9 unhealthy → 9 remediations created (minHealthy limit reached)",
			fail: nodes[5:9], healthy: 11, remediated: nodes[0:9], storm: true, event: health.EventStormStarted},
		// The budget is the first gate, and it is closed: the 2 wait for minHealthy.
		{what: "Additional failures: 9 healthy, 11 unhealthy → 9 remediations continue, 2 nodes wait due to minHealthy constraint",
			fail: nodes[9:11], healthy: 9, remediated: nodes[0:9], storm: true,
			reason: "2 unhealthy nodes wait: 2 because only 9 of 20 nodes are healthy and 11 must be"},
		// The budget allows them again, the storm does not: 6 > 5.
		{what: "5 remediated nodes recover: 14 healthy, 6 unhealthy, more than the threshold → the 2 still wait",
			recover: nodes[0:5], healthy: 14, remediated: nodes[5:9], storm: true,
			reason: "2 unhealthy nodes wait: 2 for storm recovery to end"},
		{what: "System stabilizes: 15 healthy, 5 unhealthy (3 remediations remain) → storm recovery exits; " +
			"Resume remediation: Create remediations for remaining 2 unhealthy nodes",
			recover: nodes[5:6], healthy: 15, remediated: nodes[6:11], event: health.EventStormEnded},
		{what: "Final recovery: All nodes healthy", recover: nodes[6:11], healthy: 20},
	}
	for _, step := range steps {
		var due time.Time
		for i, n := range step.fail {
			if i > 0 {
				time.Sleep(700 * time.Millisecond)
			}
			due = failNow(t, n, notReadyFor)
		}
		env.Recover(t, step.recover...)
		// The counts hold as soon as the nodes fail (a node whose condition
		// has not held for its duration is not healthy); the remediations
		// and waits come once the last one's duration passed.
		time.Sleep(time.Until(due))
		matches := func() bool {
			s := watch.status(t)
			return ptr.Deref(s.ObservedNodes, 0) == 20 && ptr.Deref(s.HealthyNodes, 0) == step.healthy &&
				ptr.Deref(s.RemediatingNodes, 0) == int32(len(step.remediated)) && stormActive(s) == step.storm &&
				ptr.Deref(s.StormRecoveryActive, true) == step.storm && (s.StormRecoveryStartTime != nil) == step.storm &&
				strings.Contains(s.Reason, step.reason) && sameNodes(remediated(t, scenario), step.remediated)
		}
		framework.Eventually(t, 20*time.Second, step.what, matches)
		framework.Consistently(t, 2*time.Second, step.what+", and it holds", matches)
		if step.event != "" {
			framework.Eventually(t, 10*time.Second, step.what+": event "+step.event, func() bool { return eventCount(t, nhc, step.event) == 1 })
		}
	}
	assert.Equal(t, 1, eventCount(t, nhc, health.EventStormStarted), "one storm")
	assert.Equal(t, 1, eventCount(t, nhc, health.EventStormEnded), "one storm")
}
