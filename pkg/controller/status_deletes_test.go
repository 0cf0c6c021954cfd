package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// A recovered node's remediation that the API server deletes at once
// (no finalizer holds it) costs one status write, not two: the sync that
// deleted it leaves its status, the recovery's mark, to the sync the
// deletion's watch event wakes, which writes the entry gone with it. One
// that a finalizer holds is recorded at once: the mark is what a relapse
// waits on.
func TestARecoveryWhoseRemediationWentAtOnceIsOneStatusWrite(t *testing.T) {
	for _, gone := range []bool{true, false} {
		t.Run(map[bool]string{true: "gone at once", false: "held by a finalizer"}[gone], func(t *testing.T) {
			nhc := workersNHC()
			f := newSyncFixture(t, nhc, healthyNode("worker-2"))
			f.remediating(t, nhc, "worker-1")
			f.setNode(t, healthyNode("worker-1"))
			f.remediations.deletesGone = gone

			d, err := f.sync()
			require.NoError(t, err)
			assert.Len(t, withReason(f.events(), health.EventRemediationRemoved), 1, "the deletion is told at once")
			if !gone {
				require.Len(t, f.statuses.written, 1, "the recovery is recorded at once")
				assert.NotNil(t, entryOf(f.lastStatus(t), "worker-1").ConditionsHealthyTimestamp)
				return
			}
			assert.Empty(t, f.statuses.written, "left to the sync the deletion's event wakes")
			assert.LessOrEqual(t, d, statusLeftWithin, "which comes within a second, should no event come")

			delete(f.remediations.seen.Remediations, "worker-1")
			_, err = f.sync()
			require.NoError(t, err)
			require.Len(t, f.statuses.written, 1, "one write")
			status := f.lastStatus(t)
			assert.Nil(t, entryOf(status, "worker-1"), "the incident ended")
			assert.Equal(t, int32(2), *status.HealthyNodes)
			require.Len(t, status.RemediationHistory, 1)
			assert.Equal(t, v1alpha1.OutcomeRecovered, status.RemediationHistory[0].Outcome)
		})
	}
}

// A sync that deleted remediations leaves its status to the next only
// when every one went at once and it records nothing else: no time-out,
// no storm's start or end, no other node's mark set or cleared.
func TestASyncThatDeletedLeavesOnlyGoneResourcesToTheNext(t *testing.T) {
	remediating := v1alpha1.NodeHealthCheckStatus{UnhealthyNodes: []*v1alpha1.UnhealthyNode{
		{Name: "worker-1", Remediations: []*v1alpha1.Remediation{{}}},
		{Name: "worker-2", Remediations: []*v1alpha1.Remediation{{}}},
	}}
	markedOn := func(nodes ...string) v1alpha1.NodeHealthCheckStatus {
		s := *remediating.DeepCopy()
		for _, entry := range s.UnhealthyNodes {
			for _, node := range nodes {
				if entry.Name == node {
					entry.ConditionsHealthyTimestamp = &t0
				}
			}
		}
		return s
	}
	storm := markedOn("worker-1")
	storm.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStormActive, Status: metav1.ConditionTrue}}
	deletedWorker1 := func(gone int) *health.Outcome {
		return &health.Outcome{Deleted: []health.Deletion{{Node: "worker-1"}}, DeletedGone: gone}
	}
	for _, tc := range []struct {
		name   string
		status v1alpha1.NodeHealthCheckStatus
		out    *health.Outcome
		leaves bool
	}{
		{"its recovery's mark, gone at once", markedOn("worker-1"), deletedWorker1(1), true},
		{"held by a finalizer", markedOn("worker-1"), deletedWorker1(0), false},
		{"another node's mark", markedOn("worker-1", "worker-2"), deletedWorker1(1), false},
		{"a storm starts", storm, deletedWorker1(1), false},
		{"a step times out", markedOn("worker-1"), &health.Outcome{Deleted: []health.Deletion{{Node: "worker-1"}}, DeletedGone: 1, TimedOut: []health.TimeOut{{Node: "worker-2"}}}, false},
		{"an action failed", markedOn("worker-1"), &health.Outcome{Deleted: []health.Deletion{{Node: "worker-1"}}, DeletedGone: 1, Errors: []error{errors.New("failed")}}, false},
	} {
		stored := workersNHC()
		stored.Status = remediating
		assert.Equal(t, tc.leaves, leavesStatus(stored, &tc.status, tc.out, time.Hour), tc.name)
	}
}
