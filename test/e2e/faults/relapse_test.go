package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

const (
	// relapseDelay is the healthyDelay: long enough to tell the first
	// recovery's start from the second's.
	relapseDelay = 60 * time.Second
	// relapseDuration is the unhealthy conditions' duration: long enough
	// that a node's deadline can be set a second ahead with transition
	// times, which the API server keeps to the second.
	relapseDuration = 10 * time.Second
	// nhcReads are the controller's lists of NodeHealthChecks at the API
	// server: the read that confirms a sync's creates is one (its informer's
	// watch, opened before, is not held).
	nhcReads = "remediation.medik8s.io/v1alpha1/nodehealthchecks"
)

// TestARelapseIsNeverLeftToALostStatusWrite: "a status that records a
// transition is never left to the next sync". A node A recovers and its
// healthyDelay starts (the status's mark, the resource's annotation); it
// relapses within the delay, in the very sync that creates B's remediation
// while C's deadline is under a second away: that sync could leave its
// status, which clears A's mark, to C's sync. C's sync's status write
// fails, and A recovers again before any status write goes through. Had
// the cleared mark been left, it would be lost with that write: the
// stored status would still show the first recovery's mark, and with the
// resource's annotation cleared by the relapse, A's second healthyDelay
// would count from the first recovery, its remediation deleted early.
//
// The syncs are made to happen in that order, not hoped for:
//   - One sync sees A, B and C changed at once: a sync creating D is held
//     at its read of the NodeHealthCheck at the API server (after D's
//     lease is taken) while they change; the sync after it sees all three.
//     Node events delivered one at a time would each start a sync.
//   - The watch of the remediation resources is held meanwhile: the
//     relapse's patch of A's resource would otherwise wake a sync right
//     after that one, with nothing to create, which writes what was left.
//   - C's sync is held the same way, after C's lease is taken, and the
//     status writes fail from then on: the relapse's sync is over by then,
//     its status written.
func TestARelapseIsNeverLeftToALostStatusWrite(t *testing.T) {
	const scenario = "relapse-left"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 4)
	a, b, c, d := nodes[0], nodes[1], nodes[2], nodes[3]
	// The leases tell when a sync is at its read (waitForLease): none may
	// be left from an earlier run.
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = env.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Delete(context.Background(), health.LeaseName(n), metav1.DeleteOptions{})
		}
	})
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.HealthyDelay = &metav1.Duration{Duration: relapseDelay}
		for i := range s.UnhealthyConditions {
			s.UnhealthyConditions[i].Duration = metav1.Duration{Duration: relapseDuration}
		}
	})
	startController(t, scenario)
	t.Cleanup(func() {
		proxy.HoldReads(nhcReads, false)
		proxy.HoldWatches("testremediations", false)
		proxy.FailStatusWrites(false)
	})

	// A fails, is remediated, and recovers: its healthyDelay starts at M.
	env.Fail(t, time.Hour, a)
	framework.Eventually(t, 30*time.Second, "A's remediation", func() bool { return len(env.Remediations(t, scenario)[a]) == 1 })
	env.Recover(t, a)
	var first time.Time
	framework.Eventually(t, 30*time.Second, "A's first recovery on record and on its resource", func() bool {
		entry := entryOf(t, scenario, a)
		if entry == nil || entry.ConditionsHealthyTimestamp == nil || entry.HealthyDelayed == nil || !*entry.HealthyDelayed {
			return false
		}
		first = entry.ConditionsHealthyTimestamp.Time
		_, ok := healthyDelayOf(t, scenario, a)
		return ok
	})
	t.Logf("first recovery: %s", first.Format(time.RFC3339))

	// D's create holds its sync while A relapses, B fails past its
	// duration, and C's duration ends a moment after the next sync.
	proxy.HoldWatches("testremediations", true)
	proxy.HoldReads(nhcReads, true)
	env.Fail(t, time.Hour, d)
	waitForLease(t, d)
	env.Fail(t, time.Hour, a, b)
	deadline := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	env.Fail(t, time.Since(deadline.Add(-relapseDuration)), c)
	// The next sync, with A, B and C, comes right after D's: it creates
	// B with C's deadline due within statusLeftWithin (1s), and the stored
	// status shows A's remediation; only A's cleared mark makes it write.
	time.Sleep(time.Until(deadline.Add(-900 * time.Millisecond)))
	proxy.HoldReads(nhcReads, false)
	// Polled closely: C's deadline is under a second away.
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(env.Remediations(t, scenario)[b]) == 1, nil
	}), "B's remediation")
	// C's sync, at its deadline, waits at its read; the sync that created
	// B is over then.
	proxy.HoldReads(nhcReads, true)
	require.True(t, time.Now().Before(deadline), "B's sync ended after C's deadline: the scenario needs a lighter load")
	waitForLease(t, c)
	proxy.FailStatusWrites(true)
	proxy.HoldReads(nhcReads, false)
	framework.Eventually(t, 10*time.Second, "C's remediation", func() bool { return len(env.Remediations(t, scenario)[c]) == 1 })
	proxy.HoldWatches("testremediations", false)
	// The controller sees the relapse's patch of A's resource; its status
	// writes fail.
	time.Sleep(3 * time.Second)

	// A recovers again while no status write goes through.
	second := time.Now().Truncate(time.Second)
	env.Recover(t, a)
	var start time.Time
	framework.Eventually(t, 30*time.Second, "A's second recovery on its resource", func() bool {
		var ok bool
		start, ok = healthyDelayOf(t, scenario, a)
		return ok
	})
	proxy.FailStatusWrites(false)
	require.False(t, start.Before(second), "A's second healthyDelay starts at %s, its first recovery, not at its second recovery %s: the relapse's cleared mark was lost",
		start.Format(time.RFC3339), second.Format(time.RFC3339))
	framework.Eventually(t, 30*time.Second, "the status to record A's second recovery", func() bool {
		entry := entryOf(t, scenario, a)
		return entry != nil && entry.ConditionsHealthyTimestamp != nil && !entry.ConditionsHealthyTimestamp.Time.Before(second)
	})

	// A's remediation is kept for the whole delay from the second recovery.
	framework.Consistently(t, time.Until(second.Add(relapseDelay-2*time.Second)), "A's remediation kept until its delay from the second recovery passes", func() bool {
		return len(env.Remediations(t, scenario)[a]) == 1
	})
	framework.Eventually(t, 40*time.Second, "A's remediation deleted once its delay passed", func() bool {
		return len(env.Remediations(t, scenario)[a]) == 0
	})
	assert.Len(t, env.Remediations(t, scenario)[b], 1)
	assert.Len(t, env.Remediations(t, scenario)[c], 1)
}

// entryOf is a node's status entry, or nil.
func entryOf(t *testing.T, scenario, node string) *v1alpha1.UnhealthyNode {
	for _, entry := range env.GetNHC(t, scenario).Status.UnhealthyNodes {
		if entry != nil && entry.Name == node {
			return entry
		}
	}
	return nil
}

// healthyDelayOf is the healthy-delay annotation of a node's one resource.
func healthyDelayOf(t *testing.T, scenario, node string) (time.Time, bool) {
	resources := env.Remediations(t, scenario)[node]
	if len(resources) != 1 {
		return time.Time{}, false
	}
	value, ok := resources[0].GetAnnotations()[v1alpha1.HealthyDelayAnnotation]
	if !ok {
		return time.Time{}, false
	}
	start, err := time.Parse(time.RFC3339, value)
	require.NoError(t, err)
	return start, true
}

// waitForLease waits until the controller holds a node's lease: it takes
// it before a create, beside the create's read of the NodeHealthCheck.
func waitForLease(t *testing.T, node string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, "the lease of "+node, func() bool {
		_, err := env.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Get(context.Background(), health.LeaseName(node), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("reading the lease of %s: %v", node, err)
		}
		return err == nil
	})
}
