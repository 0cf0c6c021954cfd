package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nodehealthcheck/nhc-controller/pkg/controller"
)

// scrapeTimeout bounds one read of the controller's /metrics.
const scrapeTimeout = 10 * time.Second

// controllerCounters are the controller's own counts, from /metrics.
type controllerCounters struct {
	// ClientRequests is rest_client_requests_total by method: what the
	// controller's clients sent, to compare with the audit log.
	ClientRequests map[string]float64 `json:"clientRequests"`
	// QueueAdds and Syncs are the workqueue's adds and items processed.
	QueueAdds float64 `json:"queueAdds"`
	Syncs     float64 `json:"syncs"`
	// GCCycles are the garbage collections completed
	// (go_gc_duration_seconds' count).
	GCCycles float64 `json:"gcCycles"`
}

func scrape(ctx context.Context, address string) (controllerCounters, error) {
	c := controllerCounters{ClientRequests: map[string]float64{}}
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return c, fmt.Errorf("parsing the controller's metrics: %w", err)
	}
	requests, ok := families["rest_client_requests_total"]
	if !ok {
		return c, fmt.Errorf("the controller serves no rest_client_requests_total")
	}
	for _, m := range requests.GetMetric() {
		c.ClientRequests[label(m, "method")] += m.GetCounter().GetValue()
	}
	for _, m := range families["workqueue_adds_total"].GetMetric() {
		if label(m, "name") == controller.QueueName {
			c.QueueAdds = m.GetCounter().GetValue()
		}
	}
	for _, m := range families["workqueue_work_duration_seconds"].GetMetric() {
		if label(m, "name") == controller.QueueName {
			c.Syncs = float64(m.GetHistogram().GetSampleCount())
		}
	}
	for _, m := range families["go_gc_duration_seconds"].GetMetric() {
		c.GCCycles = float64(m.GetSummary().GetSampleCount())
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// minus is what was counted between two scrapes.
func (c controllerCounters) minus(before controllerCounters) controllerCounters {
	d := controllerCounters{ClientRequests: map[string]float64{}, QueueAdds: c.QueueAdds - before.QueueAdds, Syncs: c.Syncs - before.Syncs,
		GCCycles: c.GCCycles - before.GCCycles}
	for method, n := range c.ClientRequests {
		if n -= before.ClientRequests[method]; n != 0 {
			d.ClientRequests[method] = n
		}
	}
	return d
}
