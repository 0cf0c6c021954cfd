package controller

import (
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Metrics are the controller's Prometheus metrics: upstream's names, and
// gauges per NodeHealthCheck. No series outlives what it describes: a node's
// series go when its remediation ends, a NodeHealthCheck's when it is
// deleted, and the histogram has no node label, so the number of series
// never grows with every node ever remediated.
type Metrics struct {
	oldRemediation    *prometheus.CounterVec
	ongoing           *prometheus.GaugeVec
	unhealthyDuration *prometheus.HistogramVec
	// remediationDuration is detected → finished of each ended remediation
	// record, by how it ended.
	remediationDuration *prometheus.HistogramVec

	observed    *prometheus.GaugeVec
	healthy     *prometheus.GaugeVec
	unhealthy   *prometheus.GaugeVec
	remediating *prometheus.GaugeVec
	stormActive *prometheus.GaugeVec
	disabled    *prometheus.GaugeVec
	old         *prometheus.GaugeVec

	remediations *prometheus.CounterVec
	// notConfirmed counts remediation resources (first or escalation step)
	// not created because the API server showed the node no longer needed
	// one, while the cache did.
	notConfirmed *prometheus.CounterVec
	syncErrors   *prometheus.CounterVec
	buildInfo    *prometheus.GaugeVec
	// acting is 1 while this process runs the workers: it leads, or
	// leader election is off.
	acting prometheus.Gauge

	mu sync.Mutex
	// nodeSeries are the label values of the node series each
	// NodeHealthCheck set at its last sync, by its name.
	nodeSeries map[string]map[nodeSeries]bool
}

// nodeSeries are the label values of a node's ongoing_remediation series.
type nodeSeries struct {
	node, namespace, kind string
}

// NewMetrics returns the metrics, not yet registered.
func NewMetrics() *Metrics {
	perNHC := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"nodehealthcheck"})
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	return &Metrics{
		oldRemediation: counter("nodehealthcheck_old_remediation_cr", "Number of old remediation CRs detected by NodeHealthChecks", "name", "namespace"),
		ongoing:        gauge("nodehealthcheck_ongoing_remediation", "Indication of an ongoing remediation of an unhealthy node", "name", "namespace", "remediation"),
		unhealthyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodehealthcheck_unhealthy_node_duration_seconds",
			Help:    "Unhealthy Node duration distribution",
			Buckets: []float64{30, 60, 120, 180, 240, 300, 600, 1200, 2400, 3600},
		}, []string{"nodehealthcheck", "namespace", "remediation"}),
		remediationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nodehealthcheck_remediation_duration_seconds",
			Help:    "Time from detecting a node unhealthy to it being healthy (or gone) again with its remediation resources deleted, by the outcome of status.remediationHistory: Recovered, TimedOut, NodeDeleted, Cancelled",
			Buckets: []float64{60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400},
		}, []string{"nodehealthcheck", "outcome"}),
		observed:    perNHC("nodehealthcheck_observed_nodes", "Nodes the NodeHealthCheck's selector matches"),
		healthy:     perNHC("nodehealthcheck_healthy_nodes", "Selected nodes that are healthy"),
		unhealthy:   perNHC("nodehealthcheck_unhealthy_nodes", "Selected nodes that are not healthy: unhealthy, soon unhealthy, or still under remediation"),
		remediating: perNHC("nodehealthcheck_remediations_in_flight", "Selected nodes with an ongoing remediation"),
		stormActive: perNHC("nodehealthcheck_storm_recovery_active", "1 while storm recovery holds back new remediations"),
		disabled:    perNHC("nodehealthcheck_disabled", "1 while the NodeHealthCheck is disabled; its Disabled condition says why"),
		old:         perNHC("nodehealthcheck_old_remediations", "Remediation resources older than 48 hours"),
		remediations: counter("nodehealthcheck_remediations_total",
			"Remediation resources by what happened to them: created, deleted_healthy (the node recovered or was confirmed healthy), deleted_node_gone, timed_out, failed (the remediator reported Succeeded=False)",
			"nodehealthcheck", "kind", "outcome"),
		notConfirmed: counter("nodehealthcheck_remediations_not_confirmed_total",
			"Remediation resources (a first remediation or an escalation step) not created because the node, read at the API server just before the create, no longer needed one, while the controller's node cache still showed it unhealthy: the node watch lagged behind",
			"nodehealthcheck"),
		syncErrors: counter("nodehealthcheck_sync_errors_total", "Syncs of a NodeHealthCheck that failed and were retried", "nodehealthcheck"),
		buildInfo:  gauge("nhc_controller_build_info", "1, labelled with the controller's version and the Go version it was built with", "version", "goversion"),
		acting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nhc_controller_acting",
			Help: "1 while this process runs the controller's workers: it leads, or leader election is off; 0 on a standby"}),
		nodeSeries: map[string]map[nodeSeries]bool{},
	}
}

// Remediation outcomes, the values of remediations_total's outcome label.
const (
	outcomeCreated        = "created"
	outcomeDeletedHealthy = "deleted_healthy"
	outcomeDeletedGone    = "deleted_node_gone"
	outcomeTimedOut       = "timed_out"
	outcomeFailed         = "failed"
)

// outcomes are every outcome of remediations_total.
var outcomes = []string{outcomeCreated, outcomeDeletedHealthy, outcomeDeletedGone, outcomeTimedOut, outcomeFailed}

// SetBuildInfo records the controller's version.
func (m *Metrics) SetBuildInfo(version string) {
	m.buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
}

// setActing records whether the workers run.
func (m *Metrics) setActing(acting bool) {
	if m == nil {
		return
	}
	value := 0.0
	if acting {
		value = 1
	}
	m.acting.Set(value)
}

// setDisabled records whether a NodeHealthCheck is disabled.
func (m *Metrics) setDisabled(nhc string, disabled bool) {
	if m == nil {
		return
	}
	value := 0.0
	if disabled {
		value = 1
	}
	m.disabled.WithLabelValues(nhc).Set(value)
}

// syncFailed counts a failed sync.
func (m *Metrics) syncFailed(nhc string) {
	if m != nil {
		m.syncErrors.WithLabelValues(nhc).Inc()
	}
}

// Register registers the metrics.
func (m *Metrics) Register(registerer prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.oldRemediation, m.ongoing, m.unhealthyDuration, m.remediationDuration, m.observed, m.healthy, m.unhealthy, m.remediating, m.stormActive, m.disabled, m.old,
		m.remediations, m.notConfirmed, m.syncErrors, m.buildInfo, m.acting} {
		if err := registerer.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// record updates the metrics after a sync. Gauges show the plan and the new
// status. Counters and histograms count each thing once, after the write
// that makes it true: a flag once its annotation is written, a node's
// remediation time once the status without it is written, so that a retried
// sync never counts twice.
func (m *Metrics) record(nhc *v1alpha1.NodeHealthCheck, p *health.Plan, out *health.Outcome, status v1alpha1.NodeHealthCheckStatus, statusWritten bool, now time.Time) {
	if m == nil {
		return
	}
	m.observed.WithLabelValues(nhc.Name).Set(float64(p.Observed))
	m.healthy.WithLabelValues(nhc.Name).Set(float64(p.Healthy))
	m.unhealthy.WithLabelValues(nhc.Name).Set(float64(p.Observed - p.Healthy))
	m.remediating.WithLabelValues(nhc.Name).Set(float64(ptr.Deref(status.RemediatingNodes, 0)))
	storm := 0.0
	if p.StormAfter(out).Active {
		storm = 1
	}
	m.stormActive.WithLabelValues(nhc.Name).Set(storm)
	m.old.WithLabelValues(nhc.Name).Set(float64(p.OldRemediations))
	m.setDisabled(nhc.Name, p.Problem != nil)
	// The counters alerts rely on exist from the first sync on, at 0, for
	// every outcome of every kind its templates make, so that increase()
	// sees the first one after a restart.
	m.syncErrors.WithLabelValues(nhc.Name).Add(0)
	for _, ref := range nhc.Spec.TemplateRefs() {
		for _, outcome := range outcomes {
			m.remediations.WithLabelValues(nhc.Name, health.RemediationKind(ref.Kind), outcome).Add(0)
		}
	}
	m.notConfirmed.WithLabelValues(nhc.Name).Add(float64(len(out.Unconfirmed)))

	current := map[nodeSeries]bool{}
	listed := map[string]bool{}
	for _, entry := range status.UnhealthyNodes {
		listed[entry.Name] = true
		for _, rem := range entry.Remediations {
			series := nodeSeries{node: entry.Name, namespace: rem.Resource.Namespace, kind: rem.Resource.Kind}
			current[series] = true
			m.ongoing.WithLabelValues(series.node, series.namespace, series.kind).Set(1)
		}
	}
	for _, ref := range out.Flagged {
		m.oldRemediation.WithLabelValues(nodeOfResource(status, ref.UID), "").Inc()
	}
	m.countOutcome(nhc.Name, out)
	m.mu.Lock()
	previous := m.nodeSeries[nhc.Name]
	m.nodeSeries[nhc.Name] = current
	m.mu.Unlock()
	for series := range previous {
		if !current[series] {
			m.deleteNodeSeries(series)
		}
	}
	if !statusWritten {
		return
	}
	m.observeFinished(nhc, status)
	// A node that left the status is healthy again or gone: its remediation
	// time is observed.
	for _, entry := range nhc.Status.UnhealthyNodes {
		if listed[entry.Name] {
			continue
		}
		for _, rem := range entry.Remediations {
			m.unhealthyDuration.WithLabelValues(nhc.Name, rem.Resource.Namespace, rem.Resource.Kind).Observe(now.Sub(rem.Started.Time).Seconds())
		}
	}
}

// observeFinished observes the remediation records that the written status
// finished and the last one had open: each once, however often a sync is
// retried.
func (m *Metrics) observeFinished(nhc *v1alpha1.NodeHealthCheck, status v1alpha1.NodeHealthCheckStatus) {
	// A node has one open record at most; an earlier record of the same
	// node and start may be finished already, and is not counted again.
	type recordKey struct {
		node    string
		started int64
	}
	var wasOpen map[recordKey]int
	for i := range nhc.Status.RemediationHistory {
		if r := &nhc.Status.RemediationHistory[i]; r.Finished == nil {
			if wasOpen == nil {
				wasOpen = map[recordKey]int{}
			}
			wasOpen[recordKey{r.TargetName, r.Started.UnixNano()}]++
		}
	}
	if wasOpen == nil {
		return
	}
	for i := range status.RemediationHistory {
		r := &status.RemediationHistory[i]
		if key := (recordKey{r.TargetName, r.Started.UnixNano()}); r.Finished != nil && wasOpen[key] > 0 {
			wasOpen[key]--
			m.remediationDuration.WithLabelValues(nhc.Name, string(r.Outcome)).Observe(r.Finished.Sub(r.Detected.Time).Seconds())
		}
	}
}

// countOutcome counts what happened to remediation resources, each once:
// the outcome lists only writes that succeeded.
func (m *Metrics) countOutcome(nhc string, out *health.Outcome) {
	for _, c := range out.Created {
		m.remediations.WithLabelValues(nhc, c.Resource.Kind, outcomeCreated).Inc()
	}
	for _, to := range out.TimedOut {
		outcome := outcomeTimedOut
		if to.Failed {
			outcome = outcomeFailed
		}
		m.remediations.WithLabelValues(nhc, to.Resource.Kind, outcome).Inc()
	}
	for _, del := range out.Deleted {
		outcome := outcomeDeletedHealthy
		if del.Reason == health.DeleteNodeGone {
			outcome = outcomeDeletedGone
		}
		m.remediations.WithLabelValues(nhc, del.Resource.Kind, outcome).Inc()
	}
}

// deleteNodeSeries deletes the series of a node whose remediation ended.
func (m *Metrics) deleteNodeSeries(series nodeSeries) {
	m.ongoing.DeleteLabelValues(series.node, series.namespace, series.kind)
	m.oldRemediation.DeleteLabelValues(series.node, "")
}

func nodeOfResource(status v1alpha1.NodeHealthCheckStatus, uid types.UID) string {
	for _, entry := range status.UnhealthyNodes {
		for _, rem := range entry.Remediations {
			if rem.Resource.UID == uid {
				return entry.Name
			}
		}
	}
	return ""
}

// forget drops the series of a deleted NodeHealthCheck and of its nodes.
func (m *Metrics) forget(nhc string) {
	if m == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{m.observed, m.healthy, m.unhealthy, m.remediating, m.stormActive, m.disabled, m.old} {
		g.DeleteLabelValues(nhc)
	}
	m.unhealthyDuration.DeletePartialMatch(prometheus.Labels{"nodehealthcheck": nhc})
	m.remediationDuration.DeletePartialMatch(prometheus.Labels{"nodehealthcheck": nhc})
	m.remediations.DeletePartialMatch(prometheus.Labels{"nodehealthcheck": nhc})
	m.syncErrors.DeleteLabelValues(nhc)
	m.notConfirmed.DeleteLabelValues(nhc)
	m.mu.Lock()
	previous := m.nodeSeries[nhc]
	delete(m.nodeSeries, nhc)
	m.mu.Unlock()
	for series := range previous {
		m.deleteNodeSeries(series)
	}
}
