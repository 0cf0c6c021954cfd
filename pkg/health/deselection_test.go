package health

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// TestADeselectionEndsTheIncidentWithoutARecovery: a node the
// NodeHealthCheck stops selecting is released (its incident ends, its
// resources are due for deletion at once); selected again before they went,
// it neither takes up its old step on the old clock nor counts its
// healthyDelay from the deselection: healthyDelay is "the time before NHC
// would allow a node to be healthy again", counted "after it first reports
// healthy" (nodehealthcheck-resource.md, HealthyDelay). The history keeps
// the two incidents apart.
func TestADeselectionEndsTheIncidentWithoutARecovery(t *testing.T) {
	s := newSimulation(testNHC(threeSteps(), healthyDelay(time.Hour), minHealthy(intstr.FromInt32(0))), 3)
	s.fail("node-00")
	s.evaluate()
	require.Equal(t, 1, s.remediated())
	step1 := s.resources["node-00"][0]

	// Deselected: the orphan's delete does not go through (refused, or the
	// node is selected again first).
	others := slices.DeleteFunc(slices.Clone(s.nodes), func(n *nodeview.Node) bool { return n.Name == "node-00" })
	d := decide(Input{NHC: s.nhc, Nodes: others, Remediations: s.resources, Now: s.clock})
	require.Len(t, d.Delete, 1, "the orphan's remediation is deleted")
	s.nhc = s.nhc.DeepCopy()
	s.nhc.Status = d.Status
	require.Len(t, d.Status.RemediationHistory, 1)
	assert.Equal(t, v1alpha1.OutcomeCancelled, d.Status.RemediationHistory[0].Outcome, "its incident ended with the deselection")

	// Selected again, still unhealthy, after step 1's 5 minutes.
	s.advance(10 * time.Minute)
	d = s.evaluate()
	assert.Empty(t, d.TimeOut, "the ended incident's step does not time out into the next")
	assert.Empty(t, d.Create)
	assert.Equal(t, WaitDeletion, verdictOf(d, "node-00").Waiting)
	assert.Equal(t, step1.Ref.UID, s.resources["node-00"][0].Ref.UID)
	for _, r := range d.Status.RemediationHistory {
		assert.NotNil(t, r.Finished, "the ended incident's resource opens no record")
	}

	// Ready again: the healthy delay counts from now, not from the deselection.
	s.advance(time.Minute)
	s.recover("node-00")
	d = s.evaluate()
	assert.Empty(t, d.Delete)
	v := verdictOf(d, "node-00")
	assert.True(t, v.HealthyDelayed)
	assert.Equal(t, s.clock, v.HealthySince)
	assert.Equal(t, s.clock.Add(time.Hour), d.NextDeadline)
}

// TestARelapseAfterARecoveryOpensANewRecord: the recovery's resource went
// in the sync that saw the node relapse, so its entry never left the
// status: the new incident's remediation is a new record, the old one
// Recovered.
func TestARelapseAfterARecoveryOpensANewRecord(t *testing.T) {
	s := newSimulation(testNHC(minHealthy(intstr.FromInt32(0))), 3)
	s.finalizers = true
	s.fail("node-00")
	s.evaluate()
	s.advance(time.Minute)
	s.recover("node-00")
	s.evaluate()
	s.advance(time.Minute)
	s.fail("node-00")
	s.finishDeletions("node-00")
	d := s.evaluate()
	require.Len(t, d.Create, 1, "the relapse starts afresh")
	h := d.Status.RemediationHistory
	require.Len(t, h, 2)
	assert.Nil(t, h[0].Finished, "the new incident's record")
	assert.Len(t, h[0].Steps, 1)
	assert.Equal(t, v1alpha1.OutcomeRecovered, h[1].Outcome)
	assert.Len(t, h[1].Steps, 1)
}

// TestARelapseWaitsForWhatADeselectionLeft: a node selected again holds a
// resource its deselection left (its remediator expects to replace the
// node); it reports healthy, and relapses while healthyDelay holds that
// resource, before or after the delay's start shows on it. The deselection
// ended the resource's incident: the relapse waits for it to go, never
// taking up its step on the old clock ("The timeout field determines when
// the next remediation is invoked", counted from the step's invocation in
// this incident), whatever the delay.
func TestARelapseWaitsForWhatADeselectionLeft(t *testing.T) {
	for _, delay := range []time.Duration{-time.Second, time.Hour} {
		for _, startShown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v,startShown=%v", delay, startShown), func(t *testing.T) {
				s := newSimulation(testNHC(threeSteps(), healthyDelay(delay), minHealthy(intstr.FromInt32(0))), 3)
				s.fail("node-00")
				s.evaluate()
				require.Equal(t, 1, s.remediated())
				s.setOnResource(s.resources["node-00"][0].Ref.UID, permanentNodeDeletion)
				others := slices.DeleteFunc(slices.Clone(s.nodes), func(n *nodeview.Node) bool { return n.Name == "node-00" })
				d := decide(Input{NHC: s.nhc, Nodes: others, Remediations: s.resources, Now: s.clock})
				require.Empty(t, d.Delete, "kept for its remediator")
				s.nhc = s.nhc.DeepCopy()
				s.nhc.Status = d.Status
				deselected := entryOf(d, "node-00").ConditionsHealthyTimestamp
				require.NotNil(t, deselected, "the deselection's mark")

				// Selected again, Ready, then not Ready within the delay.
				s.advance(time.Minute)
				s.recover("node-00")
				d = s.evaluate()
				assert.Empty(t, d.Delete, "healthyDelay holds it")
				assert.Equal(t, s.clock, verdictOf(d, "node-00").HealthySince, "counted from the recovery")
				if startShown {
					s.advance(time.Second)
					d = s.evaluate()
					assert.Equal(t, ptr.To(true), entryOf(d, "node-00").HealthyDelayed)
				}
				assert.Equal(t, deselected, entryOf(d, "node-00").ConditionsHealthyTimestamp, "the incident's end kept")
				s.advance(time.Second)
				s.fail("node-00")
				s.advance(10 * time.Minute)
				for range 2 {
					d = s.evaluate()
					assert.Empty(t, d.TimeOut, "the ended incident's step does not time out into the relapse")
					assert.Empty(t, d.Create, "nor does the relapse escalate from it")
					assert.Equal(t, WaitDeletion, verdictOf(d, "node-00").Waiting)
				}
			})
		}
	}
}

// TestADelayStampedBeforeADeselectionIsNotTheReselectedRecoverys: a node
// recovers as its first step is created (its healthy delay stamped), is
// deselected in that instant (the deselection keeps the recovery's mark)
// and selected again while still healthy. Its delay is stamped anew, after
// the mark, so that a relapse still tells what the deselection left from
// a held recovery's resources, and waits for them.
func TestADelayStampedBeforeADeselectionIsNotTheReselectedRecoverys(t *testing.T) {
	s := newSimulation(testNHC(threeSteps(), healthyDelay(-time.Second), minHealthy(intstr.FromInt32(0))), 3)
	s.fail("node-00")
	s.evaluate()
	require.Equal(t, 1, s.remediated())
	s.recover("node-00")
	d := s.evaluate()
	require.Len(t, d.StartHealthyDelay, 1)
	stamped := d.StartHealthyDelay[0].Start
	s.setOnResource(s.resources["node-00"][0].Ref.UID, permanentNodeDeletion)
	others := slices.DeleteFunc(slices.Clone(s.nodes), func(n *nodeview.Node) bool { return n.Name == "node-00" })
	d = decide(Input{NHC: s.nhc, Nodes: others, Remediations: s.resources, Now: s.clock})
	s.nhc = s.nhc.DeepCopy()
	s.nhc.Status = d.Status
	require.Equal(t, stamped, entryOf(d, "node-00").ConditionsHealthyTimestamp.Time, "the deselection keeps the recovery's mark")

	s.advance(5 * time.Second)
	d = s.evaluate()
	require.Len(t, d.StartHealthyDelay, 1, "stamped anew")
	assert.True(t, d.StartHealthyDelay[0].Start.After(stamped))
	d = s.evaluate()
	assert.Equal(t, ptr.To(true), entryOf(d, "node-00").HealthyDelayed)

	s.advance(time.Second)
	s.fail("node-00")
	s.advance(10 * time.Minute)
	for range 2 {
		d = s.evaluate()
		assert.Empty(t, d.TimeOut)
		assert.Empty(t, d.Create)
		assert.Equal(t, WaitDeletion, verdictOf(d, "node-00").Waiting)
	}
}
