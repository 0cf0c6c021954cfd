package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestProbesAndMetrics(t *testing.T) {
	t.Parallel()
	const scenario = "metrics"
	framework.Eventually(t, 20*time.Second, "ready once the caches synced", func() bool {
		resp, err := http.Get("http://" + controller.ProbeAddress + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	code, _ := get(t, "http://"+controller.ProbeAddress+"/healthz")
	assert.Equal(t, http.StatusOK, code)

	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "a remediation", func() bool { return remediated(t, scenario)[nodes[0]] })

	var metrics string
	framework.Eventually(t, 10*time.Second, "the metrics to show it", func() bool {
		_, metrics = get(t, "http://"+controller.MetricsAddress+"/metrics")
		return strings.Contains(metrics, `nodehealthcheck_ongoing_remediation{name="metrics-00",namespace="remediators",remediation="TestRemediation"} 1`)
	})
	for _, want := range []string{
		`nodehealthcheck_observed_nodes{nodehealthcheck="metrics"} 3`,
		`nodehealthcheck_healthy_nodes{nodehealthcheck="metrics"} 2`,
		`nodehealthcheck_unhealthy_nodes{nodehealthcheck="metrics"} 1`,
		`nodehealthcheck_remediations_in_flight{nodehealthcheck="metrics"} 1`,
		`nodehealthcheck_storm_recovery_active{nodehealthcheck="metrics"} 0`,
		`nodehealthcheck_remediations_total{kind="TestRemediation",nodehealthcheck="metrics",outcome="created"} 1`,
		`nhc_controller_build_info{goversion="go`,
		`workqueue_adds_total{name="nodehealthcheck"}`,
		`workqueue_depth{name="nodehealthcheck"}`,
		`rest_client_requests_total{`,
		`go_goroutines`,
	} {
		assert.Contains(t, metrics, want)
	}

	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "the node's series to go and the duration to be observed", func() bool {
		_, metrics = get(t, "http://"+controller.MetricsAddress+"/metrics")
		return !strings.Contains(metrics, `nodehealthcheck_ongoing_remediation{name="metrics-00"`) &&
			strings.Contains(metrics, `nodehealthcheck_unhealthy_node_duration_seconds_count{namespace="remediators",nodehealthcheck="metrics",remediation="TestRemediation"} 1`)
	})
	assert.Equal(t, v1alpha1.PhaseEnabled, statusOf(t, scenario).Phase)
}
