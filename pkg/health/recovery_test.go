package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// recovered is two healthy nodes and "back", which is Ready again.
func recovered(opts ...nodeOption) []*nodeview.Node {
	return append(nodes("healthy", 2), testNode("back", opts...))
}

func TestHealthyNodeRemediationIsDeleted(t *testing.T) {
	resources := remediations(snrRemediation("back", 10*time.Minute))
	d := evaluate(testNHC(), recovered(), resources)
	require.Len(t, d.Delete, 1)
	assert.Equal(t, Deletion{Node: "back", Resource: resources["back"][0].Ref, Reason: DeleteNodeHealthy}, d.Delete[0])
	assert.Equal(t, StateRecovering, verdictOf(d, "back").State)
	assert.Equal(t, 2, d.Healthy, "a node counts as healthy only once its remediation is gone")
	entry := entryOf(d, "back")
	require.NotNil(t, entry)
	assert.Equal(t, metav1.NewTime(now), *entry.ConditionsHealthyTimestamp)
	assert.Nil(t, entry.HealthyDelayed)
}

func TestHealthyNodeWithAResourceBeingDeletedStaysUnhealthy(t *testing.T) {
	resources := remediations(snrRemediation("back", 10*time.Minute, deleting))
	d := evaluate(testNHC(), recovered(), resources)
	assert.Empty(t, d.Delete, "already being deleted")
	assert.Equal(t, 2, d.Healthy)
	assert.Equal(t, v1alpha1.PhaseRemediating, d.Status.Phase)
}

func TestNodeHealthyAgainIsDroppedFromTheStatus(t *testing.T) {
	nhc := testNHC(withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "back"}}}))
	d := evaluate(nhc, recovered(), nil)
	assert.Empty(t, d.Status.UnhealthyNodes)
	assert.Equal(t, 3, d.Healthy)
	assert.Equal(t, v1alpha1.PhaseEnabled, d.Status.Phase)
}

func TestPositiveHealthyDelay(t *testing.T) {
	delay := 10 * time.Minute
	cases := []struct {
		name        string
		annotated   time.Time
		wantMark    bool
		wantDelete  bool
		wantDelayed bool
		wantNext    time.Time
	}{
		{"first seen healthy: start the delay", time.Time{}, true, false, true, now.Add(delay)},
		{"just before the delay ends", now.Add(-delay + time.Nanosecond), false, false, true, now.Add(time.Nanosecond)},
		{"exactly when the delay ends", now.Add(-delay), false, true, false, time.Time{}},
		{"after the delay", now.Add(-delay - time.Second), false, true, false, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := snrRemediation("back", time.Hour, healthyDelayAnnotation(tc.annotated))
			d := evaluate(testNHC(healthyDelay(delay)), recovered(), remediations(r))
			if tc.wantMark {
				assert.Equal(t, []HealthyDelayMark{{Resource: r.Ref, Start: now}}, d.StartHealthyDelay)
			} else {
				assert.Empty(t, d.StartHealthyDelay)
			}
			assert.Equal(t, tc.wantDelete, len(d.Delete) == 1)
			entry := entryOf(d, "back")
			if tc.wantDelayed {
				assert.Equal(t, ptr.To(true), entry.HealthyDelayed)
			} else {
				assert.Nil(t, entry.HealthyDelayed)
			}
			if !tc.wantNext.IsZero() {
				assert.Equal(t, tc.wantNext, d.NextDeadline)
			}
			assert.Equal(t, 2, d.Healthy)
		})
	}
}

func TestHealthyDelayStartSurvivesALostAnnotationWrite(t *testing.T) {
	// The annotation write failed, the status write did not: the delay keeps
	// its start.
	started := now.Add(-4 * time.Minute)
	nhc := testNHC(healthyDelay(5*time.Minute), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{
		{Name: "back", ConditionsHealthyTimestamp: ptr.To(metav1.NewTime(started)), HealthyDelayed: ptr.To(true)},
	}}))
	r := snrRemediation("back", time.Hour)
	d := evaluate(nhc, recovered(), remediations(r))
	assert.Equal(t, []HealthyDelayMark{{Resource: r.Ref, Start: started}}, d.StartHealthyDelay)
	assert.Equal(t, now.Add(time.Minute), d.NextDeadline)
}

func TestRelapseRestartsTheHealthyDelay(t *testing.T) {
	// Upstream keeps the old start, so a node that flaps back may be released
	// at once (reference §2.15 #5). Here a relapse clears the start.
	r := snrRemediation("back", time.Hour, healthyDelayAnnotation(now.Add(-8*time.Minute)))
	nhc := testNHC(healthyDelay(10*time.Minute), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{
		{Name: "back", ConditionsHealthyTimestamp: ptr.To(metav1.NewTime(now.Add(-8 * time.Minute))), HealthyDelayed: ptr.To(true)},
	}}))

	d := evaluate(nhc, recovered(notReady(time.Second)), remediations(r))
	assert.Equal(t, []corev1.ObjectReference{r.Ref}, d.ClearHealthyDelay)
	assert.Empty(t, d.Delete)
	entry := entryOf(d, "back")
	assert.Nil(t, entry.ConditionsHealthyTimestamp, "cleared on relapse")
	assert.Nil(t, entry.HealthyDelayed)

	// Healthy again: the delay starts over from now.
	nhc.Status = d.Status
	r.HealthyDelayStart = time.Time{}
	d = evaluate(nhc, recovered(), remediations(r))
	assert.Equal(t, []HealthyDelayMark{{Resource: r.Ref, Start: now}}, d.StartHealthyDelay)
	assert.Empty(t, d.Delete)
	assert.Equal(t, now.Add(10*time.Minute), d.NextDeadline)
}

func TestNegativeHealthyDelayWaitsForConfirmation(t *testing.T) {
	r := snrRemediation("back", time.Hour)
	d := evaluate(testNHC(healthyDelay(-time.Second)), recovered(), remediations(r))
	assert.Empty(t, d.Delete)
	assert.Equal(t, []HealthyDelayMark{{Resource: r.Ref, Start: now}}, d.StartHealthyDelay, "since when the node is healthy, a negative delay's too")
	assert.Equal(t, ptr.To(true), entryOf(d, "back").HealthyDelayed, "upstream leaves it unset (§2.15 #5)")
	assert.Equal(t, now.Add(OldRemediationAge-time.Hour), d.NextDeadline, "nothing but the 48h flag is ahead")

	d = evaluate(testNHC(healthyDelay(-time.Second)), recovered(confirmedHealthy), remediations(r))
	assert.Equal(t, []Deletion{{Node: "back", Resource: r.Ref, Reason: DeleteManuallyConfirmed}}, d.Delete)
	assert.Nil(t, entryOf(d, "back").HealthyDelayed)
	assert.Equal(t, []string{"back"}, d.RemoveConfirmation, "the recovery it confirms consumes it")

	d = evaluate(testNHC(healthyDelay(-time.Second)), recovered(confirmedHealthy), nil)
	assert.Equal(t, []string{"back"}, d.RemoveConfirmation)
	assert.Equal(t, 3, d.Healthy)
}

func TestManualConfirmationSkipsAPositiveDelay(t *testing.T) {
	r := snrRemediation("back", time.Hour, healthyDelayAnnotation(now.Add(-time.Minute)))
	d := evaluate(testNHC(healthyDelay(time.Hour)), recovered(confirmedHealthy), remediations(r))
	assert.Equal(t, []Deletion{{Node: "back", Resource: r.Ref, Reason: DeleteManuallyConfirmed}}, d.Delete)
}

func TestManualConfirmationOfAnUnhealthyNodeWaits(t *testing.T) {
	r := snrRemediation("back", time.Hour)
	d := evaluate(testNHC(healthyDelay(-time.Second)), recovered(unhealthy, confirmedHealthy), remediations(r))
	assert.Empty(t, d.Delete)
	assert.Empty(t, d.RemoveConfirmation)
}

func TestOrphanedRemediations(t *testing.T) {
	cases := []struct {
		name       string
		opts       []remediationOption
		wantDelete bool
	}{
		{"a plain orphan is deleted", nil, true},
		{"permanent node deletion expected, not yet succeeded: kept", []remediationOption{permanentNodeDeletion}, false},
		{"permanent node deletion expected, failed: kept", []remediationOption{permanentNodeDeletion, succeeded(metav1.ConditionFalse)}, false},
		{"permanent node deletion expected and succeeded: deleted", []remediationOption{permanentNodeDeletion, succeeded(metav1.ConditionTrue)}, true},
		{"already being deleted", []remediationOption{deleting}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := snrRemediation("gone", time.Hour, tc.opts...)
			d := evaluate(testNHC(), nodes("healthy", 3), remediations(r))
			if tc.wantDelete {
				assert.Equal(t, []Deletion{{Node: "gone", Resource: r.Ref, Reason: DeleteNodeGone}}, d.Delete)
			} else {
				assert.Empty(t, d.Delete)
			}
			assert.NotNil(t, entryOf(d, "gone"), "listed while its resource exists")
			assert.Equal(t, 3, d.Observed)
			assert.Equal(t, 3, d.Healthy)
			assert.Equal(t, 0, d.Remediating, "orphans are not selected nodes")
		})
	}
}

func TestOrphanEntryWithoutResourcesIsPruned(t *testing.T) {
	// Upstream never prunes such entries (§2.9).
	nhc := testNHC(withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: "gone"}}}))
	d := evaluate(nhc, nodes("healthy", 3), nil)
	assert.Empty(t, d.Status.UnhealthyNodes)
}

func TestOldRemediationsAreFlaggedOnce(t *testing.T) {
	young := snrRemediation("young", OldRemediationAge-time.Second)
	old := snrRemediation("old", OldRemediationAge)
	flagged := snrRemediation("flagged", 3*OldRemediationAge, func(r *Remediation) { r.FlaggedOld = true })
	list := append(nodes("healthy", 5), testNode("young", unhealthy), testNode("old", unhealthy), testNode("flagged", unhealthy))
	d := evaluate(testNHC(), list, remediations(young, old, flagged))
	assert.Equal(t, []corev1.ObjectReference{old.Ref}, d.FlagOld)
	assert.Equal(t, now.Add(time.Second), d.NextDeadline)
}

func TestAPendingWriteHoldsOnlyItsNode(t *testing.T) {
	// The last sync created a resource for "sick"; the cache does not show it
	// yet. "back" recovered meanwhile: its resource goes now.
	sickEntry := &v1alpha1.UnhealthyNode{Name: "sick", Remediations: []*v1alpha1.Remediation{{
		Resource: snrRemediation("sick", time.Second).Ref, Started: metav1.NewTime(now.Add(-time.Second)), TemplateName: "automatic"}}}
	nhc := testNHC(minHealthy(intstr.FromInt32(0)), withStatus(v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{
		sickEntry, {Name: "back", Remediations: []*v1alpha1.Remediation{{Resource: snrRemediation("back", time.Hour).Ref, Started: metav1.NewTime(now.Add(-time.Hour))}}},
	}}))
	list := append(nodes("healthy", 2), testNode("sick", unhealthy), testNode("back"))
	d := decide(Input{NHC: nhc, Nodes: list, Remediations: remediations(snrRemediation("back", time.Hour)),
		PendingNodes: map[string]bool{"sick": true}, Now: now})
	assert.Empty(t, d.Create, "no second resource for the node whose create is not visible yet")
	assert.Equal(t, WaitOwnWrite, verdictOf(d, "sick").Waiting)
	assert.Equal(t, []string{"back"}, deletedNames(d), "the other nodes go on")
	assert.Equal(t, sickEntry, entryOf(d, "sick"), "its entry stays as written")
	assert.Equal(t, int32(2), *d.Status.RemediatingNodes, "still counted as under remediation")
	assert.NotContains(t, d.Status.Reason, "wait", "a moment's wait is not worth a word")
}

// TestAConfirmationIsConsumedByTheRecoveryItConfirms: with a negative
// healthyDelay NHC "will never consider the node healthy" without manual
// intervention, and once the confirmed node meets the healthy criteria
// "NHC will delete the ... manually-confirmed-healthy annotation from the
// Node, and proceed with deleting the remediation CR". A remediator's
// finalizer holds the confirmed recovery's resource past a relapse: the
// next incident's resource still waits for a confirmation of its own.
func TestAConfirmationIsConsumedByTheRecoveryItConfirms(t *testing.T) {
	s := newSimulation(testNHC(healthyDelay(-time.Second), minHealthy(intstr.FromInt32(0))), 3)
	s.finalizers = true
	s.fail("node-00")
	s.evaluate()
	require.Equal(t, 1, s.remediated())

	s.recover("node-00")
	d := s.evaluate()
	assert.True(t, verdictOf(d, "node-00").HealthyDelayed, "waits for a confirmation")
	s.confirm("node-00")
	d = s.evaluate()
	require.Len(t, d.Delete, 1, "the confirmation releases the remediation")
	assert.Equal(t, []string{"node-00"}, d.RemoveConfirmation, "and is consumed")

	// The node fails again while the finalizer holds the resource; once it
	// goes, the new incident gets a resource of its own.
	s.advance(time.Minute)
	s.fail("node-00")
	s.evaluate()
	s.finishDeletions("node-00")
	d = s.evaluate()
	require.Len(t, d.Create, 1)

	s.advance(time.Minute)
	s.recover("node-00")
	d = s.evaluate()
	assert.Empty(t, d.Delete, "no confirmation of this recovery yet")
	assert.True(t, verdictOf(d, "node-00").HealthyDelayed)
	assert.Equal(t, ptr.To(true), entryOf(d, "node-00").HealthyDelayed)
}

// TestARecoveryBeingDeletedIsNotDelayed: the healthy delay holds back a
// deletion; once every resource is being deleted there is none to hold.
func TestARecoveryBeingDeletedIsNotDelayed(t *testing.T) {
	r := snrRemediation("back", time.Hour, deleting)
	d := evaluate(testNHC(healthyDelay(-time.Second)), recovered(), remediations(r))
	assert.False(t, verdictOf(d, "back").HealthyDelayed)
	assert.Nil(t, entryOf(d, "back").HealthyDelayed)
}
