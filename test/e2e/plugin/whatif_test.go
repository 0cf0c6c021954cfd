package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// whatIfFile writes a NodeHealthCheck for kubectl nhc what-if -f.
func whatIfFile(t *testing.T, name, template, minHealthy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: remediation.medik8s.io/v1alpha1
kind: NodeHealthCheck
metadata:
  name: %s
spec:
  selector:
    matchLabels:
      %s: whatif
  minHealthy: %s
  remediationTemplate:
    apiVersion: test.medik8s.io/v1alpha1
    kind: TestRemediationTemplate
    namespace: %s
    name: %s
`, name, framework.ScenarioLabel, minHealthy, framework.RemediatorNamespace, template)), 0o600))
	return path
}

func TestWhatIfEvaluatesWithoutWriting(t *testing.T) {
	t.Parallel()
	const scenario = "whatif"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 4)
	env.CreateNode(t, "whatif-other", "whatif-shared", framework.WithLabel(framework.ScenarioLabel, scenario), framework.WithLabel("shared", "yes"))
	env.CreateTemplate(t, "whatif-other", nil)
	env.CreateNHC(t, "whatif-other", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"shared": "yes"}}
	})
	env.Fail(t, time.Hour, nodes[0])
	env.Fail(t, time.Minute, nodes[1])

	// The default conditions (Ready False or Unknown for 300s) apply.
	out := nhc(t, "what-if", "-f", whatIfFile(t, "whatif-new", scenario, `"51%"`))
	assert.Contains(t, out, "WARNING: 1 node also selected by whatif-other: whatif-shared; whatif-other remediates 1 of them "+
		"(only one NodeHealthCheck remediates a node: the one already remediating it, else one that can act (not disabled, paused or deleting), the oldest whose unhealthy conditions hold on it)\n")
	assert.Contains(t, out, "Budget: 3 of 5 selected nodes healthy, 3 must be: new remediations allowed\n")
	assert.Equal(t, []string{"whatif-00", "Unhealthy", "Ready=False", "60m", "now"}, row(t, out, "whatif-00"))
	assert.Regexp(t, `^whatif-01 SoonUnhealthy Ready=False \d+s at \S+Z \(in (3m\d+s|4m\d*s?)\)$`, strings.Join(row(t, out, "whatif-01"), " "))
	assert.Equal(t, "whatif-new would select 5 nodes: it would remediate 1 now and 1 later (within 24h), and hold back 0", lastLine(out))

	held := nhc(t, "what-if", "-f", whatIfFile(t, "whatif-strict", scenario, "4"))
	assert.Equal(t, "whatif-00 Unhealthy Ready=False 60m held: only 3 of 5 nodes are healthy and 4 must be", strings.Join(row(t, held, "whatif-00"), " "))

	missing := nhc(t, "what-if", "-f", whatIfFile(t, "whatif-missing", "no-such-template", "0"))
	assert.Contains(t, lastLine(missing), "it would be disabled: RemediationTemplateNotFound: Remediation template TestRemediationTemplate remediators/no-such-template not found: failed to get external remediation template remediators/no-such-template")

	var report cli.WhatIfReport
	nhcJSON(t, &report, "what-if", "-f", whatIfFile(t, "whatif-new", scenario, `"51%"`), "--horizon", "1m")
	assert.Equal(t, 5, report.Selected)
	assert.False(t, report.Applied)
	assert.Equal(t, []cli.Overlap{{NodeHealthCheck: "whatif-other", Nodes: []string{"whatif-shared"}, Remediates: 1}}, report.Overlaps)
	require.Len(t, report.Nodes, 2)
	assert.Equal(t, "now", report.Nodes[0].Remediation)
	assert.Contains(t, report.Nodes[1].Remediation, "not before", "due after the 1m horizon")

	// Nothing was written.
	for _, name := range []string{"whatif-new", "whatif-strict", "whatif-missing"} {
		_, err := env.NHC.RemediationV1alpha1().NodeHealthChecks().Get(context.Background(), name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), name)
	}
	assert.Empty(t, env.Remediations(t, "whatif-new"))
}

func TestErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	fail := func(kubeconfig string, args ...string) string {
		t.Helper()
		_, errOut, err := kubectlNHC(t, kubeconfig, args...)
		require.Error(t, err, "kubectl nhc %v", args)
		return strings.TrimSpace(errOut)
	}
	admin := env.Cluster.Kubeconfig
	assert.Equal(t, `error: NodeHealthCheck "nope" not found: kubectl get nhc lists them`, fail(admin, "status", "nope"))
	assert.Equal(t, `error: node "ghost" not found: kubectl get nodes lists them`, fail(admin, "why", "ghost"))
	assert.Equal(t, `error: unknown output format "xml": use wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=SPEC`, fail(admin, "status", "-o", "xml"))

	notNHC := filepath.Join(t.TempDir(), "cm.yaml")
	require.NoError(t, os.WriteFile(notNHC, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o600))
	assert.Equal(t, "error: "+notNHC+" holds a v1 ConfigMap, not a NodeHealthCheck (remediation.medik8s.io/v1alpha1)", fail(admin, "what-if", "-f", notNHC))
	typo := filepath.Join(t.TempDir(), "typo.yaml")
	require.NoError(t, os.WriteFile(typo, []byte("apiVersion: remediation.medik8s.io/v1alpha1\nkind: NodeHealthCheck\nspec:\n  minHealth: 1\n"), 0o600))
	assert.Contains(t, fail(admin, "what-if", "-f", typo), `unknown field "minHealth"`)

	nobody, err := env.Cluster.UserKubeconfig("nobody")
	require.NoError(t, err)
	assert.Contains(t, fail(nobody, "status"), "error: you may not list nodehealthchecks: ask for the view ClusterRole (it includes NodeHealthChecks) or the nhc-controller-nodehealthcheck-editor role")

	bare, err := controlplane.Start()
	require.NoError(t, err)
	defer func() { assert.NoError(t, bare.Stop()) }()
	assert.Equal(t, "error: the NodeHealthCheck API (remediation.medik8s.io/v1alpha1) is not installed in this cluster: install nhc-controller with kubectl apply -k manifests/", fail(bare.Kubeconfig, "history"))
}
