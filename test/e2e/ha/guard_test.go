package ha

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// applyRemediationGuard applies the remediation guard of the default
// install until the test ends, and waits until the API server enforces it
// on a NodeHealthCheck whose status lists a remediation.
func applyRemediationGuard(t *testing.T) {
	t.Helper()
	guard := filepath.Join(controlplane.RepoRoot(), "manifests/admission/remediation-guard.yaml")
	out, err := env.Cluster.Kubectl("apply", "-f", guard)
	require.NoError(t, err, out)

	const probe = "guard-probe"
	env.CreateNHC(t, probe, nil)
	stored := env.GetNHC(t, probe)
	stored.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "probe-node", Remediations: []*v1alpha1.Remediation{{Started: metav1.Now()}}}}
	_, err = env.NHC.RemediationV1alpha1().NodeHealthChecks().UpdateStatus(context.Background(), stored, metav1.UpdateOptions{})
	require.NoError(t, err)
	deleteProbe := func() error { return dryRunDelete(probe) }
	framework.Eventually(t, 30*time.Second, "the remediation guard to be enforced", func() bool { return deleteProbe() != nil })
	t.Cleanup(func() {
		_, _ = env.Cluster.Kubectl("delete", "-f", guard)
		framework.Eventually(t, 30*time.Second, "the remediation guard to be lifted", func() bool { return deleteProbe() == nil })
	})
}

// dryRunDelete deletes a NodeHealthCheck as a server-side dry run: what
// admission says of a real deletion, which would cascade to its
// remediations.
func dryRunDelete(name string) error {
	return env.NHC.RemediationV1alpha1().NodeHealthChecks().Delete(context.Background(), name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
}

// A storm's first remediations are never hidden from the remediation guard
// by a status left to the next sync: with the leader killed once two
// remediations exist, of three nodes due at once and three due 0.6 s
// later, the stored status shows the guard a remediation, and deleting the
// NodeHealthCheck, which would delete them, is refused.
func TestTheGuardSeesAStormsFirstRemediationsWhenTheLeaderDies(t *testing.T) {
	const scenario = "guard-storm"
	applyRemediationGuard(t)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 6)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		for i := range s.UnhealthyConditions {
			s.UnhealthyConditions[i].Duration = metav1.Duration{Duration: 5 * time.Second}
		}
	})
	env.Fail(t, time.Second, nodes[:3]...)
	env.Fail(t, 400*time.Millisecond, nodes[3:]...)
	leader, err := env.StartController(scenario, "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, leader)

	framework.Eventually(t, 20*time.Second, "two remediations", func() bool { return len(env.Remediations(t, scenario)) >= 2 })
	leader.Kill()

	assert.True(t, health.ShowsRemediation(&env.GetNHC(t, scenario).Status), "the stored status shows a remediation")
	err = dryRunDelete(scenario)
	require.Error(t, err, "deleting a NodeHealthCheck with remediations is refused")
	assert.Contains(t, err.Error(), "deletion prohibited due to running remediation")
}
