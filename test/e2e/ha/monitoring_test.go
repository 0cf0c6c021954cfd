package ha

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// dashboardMetrics parses every query of the Grafana dashboard with
// Prometheus's parser, its variables given values, and returns the metrics
// they read.
func dashboardMetrics(t *testing.T) map[string]bool {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests/monitoring/dashboards/nhc-controller.json"))
	require.NoError(t, err)
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dashboard))
	variables := strings.NewReplacer("$__rate_interval", "5m", "$nhc", ".*", "$job", ".*")
	used := map[string]bool{}
	for _, panel := range dashboard.Panels {
		require.NotEmpty(t, panel.Targets, panel.Title)
		for _, target := range panel.Targets {
			expr, err := parser.ParseExpr(variables.Replace(target.Expr))
			require.NoError(t, err, panel.Title)
			for _, selector := range parser.ExtractSelectors(expr) {
				for _, matcher := range selector {
					if matcher.Name == "__name__" {
						used[matcher.Value] = true
					}
				}
			}
		}
	}
	assert.GreaterOrEqual(t, len(dashboard.Panels), 12)
	return used
}

// runbookURL is where the alerts' runbooks are published: docs/runbooks.md.
const runbookURL = "https://github.com/nodehealthcheck/nhc-controller/blob/main/docs/runbooks.md#"

// TestTheAlertsParseAndUseMetricsThatExist parses the PrometheusRule's rules
// and the Grafana dashboard's queries with Prometheus's own parser, and
// checks that every metric they use is served by a running controller.
func TestTheAlertsParseAndUseMetricsThatExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "manifests/monitoring/prometheus-rule.yaml"))
	require.NoError(t, err)
	var rule struct {
		Spec map[string]any `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &rule))
	groups, err := yaml.Marshal(rule.Spec)
	require.NoError(t, err)
	parsed, errs := rulefmt.Parse(groups, false)
	require.Empty(t, errs, "the rules parse")
	runbooks, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "docs/runbooks.md"))
	require.NoError(t, err)
	used := map[string]bool{}
	alerts := 0
	for _, group := range parsed.Groups {
		for _, r := range group.Rules {
			alerts++
			assert.NotEmpty(t, r.Annotations["description"], "alert %s says what it means", r.Alert)
			assert.Equal(t, runbookURL+strings.ToLower(r.Alert), r.Annotations["runbook_url"], "alert %s links its runbook", r.Alert)
			assert.Contains(t, string(runbooks), "\n## "+r.Alert+"\n", "docs/runbooks.md has a section for %s", r.Alert)
			expr, err := parser.ParseExpr(r.Expr)
			require.NoError(t, err, r.Alert)
			for _, selector := range parser.ExtractSelectors(expr) {
				for _, matcher := range selector {
					if matcher.Name == "__name__" {
						used[matcher.Value] = true
					}
				}
			}
		}
	}
	assert.Equal(t, 6, alerts)
	for name := range dashboardMetrics(t) {
		used[name] = true
	}

	// A leader with a NodeHealthCheck that has remediated a node.
	const scenario = "monitoring"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartController(scenario, "--leader-elect=true", "--leader-election-namespace=default")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 30*time.Second, "a remediation", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })

	var metrics string
	framework.Eventually(t, 30*time.Second, "every metric the alerts use", func() bool {
		resp, err := http.Get("http://" + c.MetricsAddress + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		metrics = string(body)
		for name := range used {
			if !strings.Contains(metrics, "\n"+name+"{") && !strings.Contains(metrics, "\n"+name+" ") {
				return false
			}
		}
		return true
	})
	for name := range used {
		assert.Contains(t, metrics, "\n"+name, "the alerts use %s", name)
	}
}

// TestTheMonitoringKustomizationRenders: kubectl apply -k
// manifests/monitoring/ renders the scraper, the ServiceMonitor, the alerts,
// and the dashboard as a ConfigMap that Grafana's sidecar loads.
func TestTheMonitoringKustomizationRenders(t *testing.T) {
	out, err := env.Cluster.Kubectl("kustomize", filepath.Join(controlplane.RepoRoot(), "manifests/monitoring"))
	require.NoError(t, err)
	for _, kind := range []string{"ServiceAccount", "Secret", "ClusterRoleBinding", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		assert.Contains(t, out, "\nkind: "+kind+"\n", kind)
	}
	assert.Contains(t, out, "grafana_dashboard: \"1\"")
	assert.Contains(t, out, "nhc-controller.json: |")
	assert.Contains(t, out, "name: nhc-controller-grafana-dashboard\n")
}
