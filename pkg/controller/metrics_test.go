package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// seriesOf counts the series of each metric family.
func seriesOf(t *testing.T, m *Metrics) map[string]int {
	t.Helper()
	registry := prometheus.NewRegistry()
	require.NoError(t, m.Register(registry))
	families, err := registry.Gather()
	require.NoError(t, err)
	counts := map[string]int{}
	for _, f := range families {
		counts[f.GetName()] = len(f.GetMetric())
	}
	return counts
}

func TestNoMetricSeriesOutlivesWhatItDescribes(t *testing.T) {
	m := NewMetrics()
	nhc := workersNHC()
	remediated := remediatedStatus(t0.Time)
	plan := &health.Plan{}

	// Nodes come and go under remediation: their series come and go with them.
	for i := range 100 {
		status := *remediated.DeepCopy()
		status.UnhealthyNodes[0].Name = "worker-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		m.record(nhc, plan, &health.Outcome{Flagged: []corev1.ObjectReference{status.UnhealthyNodes[0].Remediations[0].Resource}}, status, true, t0.Time)
		nhc.Status = status
	}
	series := seriesOf(t, m)
	assert.Equal(t, 1, series["nodehealthcheck_ongoing_remediation"], "only the node under remediation now")
	assert.Equal(t, 1, series["nodehealthcheck_old_remediation_cr"])
	assert.Equal(t, 1, series["nodehealthcheck_unhealthy_node_duration_seconds"], "no node label: one series per NodeHealthCheck and kind")

	m.record(nhc, plan, &health.Outcome{}, v1alpha1.NodeHealthCheckStatus{}, true, t0.Add(time.Minute))
	series = seriesOf(t, m)
	assert.Zero(t, series["nodehealthcheck_ongoing_remediation"], "the last remediation ended")
	assert.Zero(t, series["nodehealthcheck_old_remediation_cr"])

	nhc.Status = remediated
	m.record(nhc, plan, &health.Outcome{}, remediated, true, t0.Time)
	m.forget(nhc.Name)
	for name, count := range seriesOf(t, m) {
		if name == "nhc_controller_acting" {
			continue // the process's, not a NodeHealthCheck's
		}
		assert.Zero(t, count, "%s after the NodeHealthCheck was deleted", name)
	}
}

// nhc_controller_acting is 1 while the workers run, whether the process
// leads or runs without leader election, and 0 before and after: the
// "no leader" alert reads it.
func TestActingWhileTheWorkersRun(t *testing.T) {
	m := NewMetrics()
	registry := prometheus.NewRegistry()
	require.NoError(t, m.Register(registry))
	acting := func() float64 {
		families, err := registry.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "nhc_controller_acting" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no nhc_controller_acting")
		return 0
	}
	assert.Zero(t, acting(), "a standby")
	m.setActing(true)
	assert.Equal(t, 1.0, acting())
	m.setActing(false)
	assert.Zero(t, acting())
}

func TestRemediationsAreCountedByOutcome(t *testing.T) {
	m := NewMetrics()
	nhc := workersNHC()
	ref := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{Kind: "SelfNodeRemediation", Namespace: "snr", Name: name}
	}
	m.record(nhc, &health.Plan{}, &health.Outcome{
		Created:  []health.Created{{Resource: ref("a")}, {Resource: ref("b")}},
		TimedOut: []health.TimeOut{{Resource: ref("c")}, {Resource: ref("d"), Failed: true}},
		Deleted:  []health.Deletion{{Resource: ref("e"), Reason: health.DeleteNodeHealthy}, {Resource: ref("f"), Reason: health.DeleteManuallyConfirmed}, {Resource: ref("g"), Reason: health.DeleteNodeGone}},
	}, v1alpha1.NodeHealthCheckStatus{}, true, t0.Time)
	m.syncFailed(nhc.Name)
	m.SetBuildInfo("v1.2.3")
	for outcome, want := range map[string]float64{outcomeCreated: 2, outcomeTimedOut: 1, outcomeFailed: 1, outcomeDeletedHealthy: 2, outcomeDeletedGone: 1} {
		var metric dto.Metric
		require.NoError(t, m.remediations.WithLabelValues("workers", "SelfNodeRemediation", outcome).Write(&metric))
		assert.Equal(t, want, metric.GetCounter().GetValue(), outcome)
	}
	series := seriesOf(t, m)
	assert.Equal(t, 1, series["nodehealthcheck_sync_errors_total"])
	assert.Equal(t, 1, series["nhc_controller_build_info"])
	m.forget(nhc.Name)
	series = seriesOf(t, m)
	assert.Zero(t, series["nodehealthcheck_remediations_total"])
	assert.Zero(t, series["nodehealthcheck_sync_errors_total"])
}

// Every outcome of every kind a NodeHealthCheck's templates make is counted
// from its first sync on, at 0, so that increase() sees the first failure
// after a restart (a series that appears at 1 has no increase).
func TestRemediationCountersStartAtZero(t *testing.T) {
	m := NewMetrics()
	m.record(workersNHC(), &health.Plan{}, &health.Outcome{}, v1alpha1.NodeHealthCheckStatus{}, true, t0.Time)
	for _, outcome := range outcomes {
		var metric dto.Metric
		require.NoError(t, m.remediations.WithLabelValues("workers", "SelfNodeRemediation", outcome).Write(&metric))
		assert.Zero(t, metric.GetCounter().GetValue(), outcome)
	}
	assert.Equal(t, len(outcomes), seriesOf(t, m)["nodehealthcheck_remediations_total"], "one series per outcome, before anything happened")
	assert.Equal(t, 1, seriesOf(t, m)["nodehealthcheck_remediations_not_confirmed_total"])
}

func TestRemediationDurationIsObservedOnceWhenARecordFinishes(t *testing.T) {
	m := NewMetrics()
	nhc := workersNHC()
	detected := t0.Add(-10 * time.Minute)
	open := v1alpha1.RemediationRecord{TargetKind: "Node", TargetName: "worker-1", Detected: metav1.NewTime(detected), Started: t0, Outcome: v1alpha1.OutcomeRemediating}
	finished := *open.DeepCopy()
	finished.Finished, finished.Outcome = &t0, v1alpha1.OutcomeRecovered
	nhc.Status.RemediationHistory = []v1alpha1.RemediationRecord{open}
	done := v1alpha1.NodeHealthCheckStatus{RemediationHistory: []v1alpha1.RemediationRecord{finished}}

	m.record(nhc, &health.Plan{}, &health.Outcome{}, done, false, t0.Time)
	m.record(nhc, &health.Plan{}, &health.Outcome{}, done, true, t0.Time)
	nhc.Status = done
	m.record(nhc, &health.Plan{}, &health.Outcome{}, done, true, t0.Time)

	var metric dto.Metric
	require.NoError(t, m.remediationDuration.WithLabelValues("workers", "Recovered").(prometheus.Histogram).Write(&metric))
	assert.Equal(t, uint64(1), metric.GetHistogram().GetSampleCount(), "once: not before the write, not again after it")
	assert.Equal(t, 600.0, metric.GetHistogram().GetSampleSum(), "detected → finished")
}
