package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func TestKubectlGetShowsTheStateAtAGlance(t *testing.T) {
	sample := filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "nhc-worker-self-node-remediation.yaml")
	_, err := cluster.Kubectl("apply", "-f", sample)
	require.NoError(t, err)
	defer func() { _, _ = cluster.Kubectl("delete", "-f", sample) }()

	ctx := context.Background()
	nhcs := nhcClient.RemediationV1alpha1().NodeHealthChecks()
	nhc, err := nhcs.Get(ctx, "nhc-snr-worker", metav1.GetOptions{})
	require.NoError(t, err)
	nhc.Status = v1alpha1.NodeHealthCheckStatus{
		ObservedNodes: ptr.To[int32](7), HealthyNodes: ptr.To[int32](5), RemediatingNodes: ptr.To[int32](2),
		Phase: v1alpha1.PhaseRemediating, Reason: "NHC is remediating 2 nodes",
	}
	_, err = nhcs.UpdateStatus(ctx, nhc, metav1.UpdateOptions{})
	require.NoError(t, err)

	out, err := cluster.Kubectl("get", "nhc")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"NAME", "PHASE", "OBSERVED", "HEALTHY", "REMEDIATING", "AGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"nhc-snr-worker", "Remediating", "7", "5", "2"}, strings.Fields(lines[1])[:5])

	wide, err := cluster.Kubectl("get", "nodehealthchecks", "-o", "wide")
	require.NoError(t, err)
	assert.Contains(t, wide, "STORM")
	assert.Contains(t, wide, "NHC is remediating 2 nodes")
}

func TestKubectlExplainDocumentsEveryField(t *testing.T) {
	fields := map[string]string{
		"nodehealthcheck.spec.minHealthy":                                  "minimum number of healthy selected nodes",
		"nodehealthcheck.spec.maxUnhealthy":                                "maximum number of unhealthy selected nodes",
		"nodehealthcheck.spec.selector":                                    "at least one matchLabels or matchExpressions entry",
		"nodehealthcheck.spec.remediationTemplate":                         "without its \"Template\" suffix",
		"nodehealthcheck.spec.escalatingRemediations":                      "one after the",
		"nodehealthcheck.spec.escalatingRemediations.timeout":              "at least 60s",
		"nodehealthcheck.spec.escalatingRemediations.order":                "lower orders run first",
		"nodehealthcheck.spec.unhealthyConditions":                         "Defaults to Ready=False and Ready=Unknown",
		"nodehealthcheck.spec.unhealthyConditions.duration":                "lastTransitionTime",
		"nodehealthcheck.spec.pauseRequests":                               "no new remediation starts",
		"nodehealthcheck.spec.healthyDelay":                                "manually-confirmed-healthy",
		"nodehealthcheck.spec.stormRecoveryThreshold":                      "storm recovery",
		"nodehealthcheck.spec.stormCooldownDuration":                       "compatibility",
		"nodehealthcheck.status.observedNodes":                             "selector matches",
		"nodehealthcheck.status.unhealthyNodes.remediations.timedOut":      "given up",
		"nodehealthcheck.status.unhealthyNodes.healthyDelayed":             "healthyDelay",
		"nodehealthcheck.status.inFlightRemediations":                      "deprecated",
		"nodehealthcheck.status.stormRecoveryStartTime":                    "storm recovery started",
		"nodehealthcheck.status.unhealthyNodes.conditionsHealthyTimestamp": "cleared when the node relapses, once",
		"nodehealthcheck.status.remediationHistory":                        "newest (by started) first",
		"nodehealthcheck.status.remediationHistory.detected":               "lastTransitionTime plus the condition's duration",
		"nodehealthcheck.status.remediationHistory.fenced":                 "node.kubernetes.io/out-of-service",
		"nodehealthcheck.status.remediationHistory.outcome":                "Remediating while the remediation is ongoing",
		"nodehealthcheck.status.remediationHistory.steps.timedOut":         "gave up on this step",
	}
	// The API server publishes a new CRD's schema a moment after the CRD is
	// established.
	framework.Eventually(t, 30*time.Second, "the CRD's schema to be published", func() bool {
		_, err := cluster.Kubectl("explain", "nodehealthcheck.status.remediationHistory")
		return err == nil
	})
	for field, want := range fields {
		t.Run(field, func(t *testing.T) {
			out, err := cluster.Kubectl("explain", field)
			require.NoError(t, err)
			assert.Contains(t, strings.Join(strings.Fields(out), " "), want)
		})
	}
}
