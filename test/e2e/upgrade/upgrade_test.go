// Package upgrade proves that upgrading from the previous release loses and
// duplicates nothing: remediations in flight, node leases and history carry
// over, through the release file and through the chart. It installs
// cluster-wide objects, so it has its own control plane.
package upgrade

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// The previous release, and the commit it was cut from, for clones that
// lack tags.
const (
	previousRelease = "v0.2.0"
	previousCommit  = "4ad949b0f3365b98e12f57daecc534775577b5ef"
)

var env *framework.Env

func TestMain(m *testing.M) {
	os.Exit(framework.Run(m, func(e *framework.Env) { env = e }))
}

const scenario = "upgrade"

// TestUpgradeFromThePreviousReleaseCarriesOn installs the previous release
// as its users did (kubectl apply -k of its manifests) and lets it
// remediate, then upgrades to this one with the release file (the same
// render as kubectl apply -k manifests/), and then moves to the chart
// (helm install --take-ownership --force-conflicts, as docs/operating.md
// says). Across each step the remediation in
// flight keeps its resource and its node lease, history keeps its records,
// and the new controller carries on: it remediates a new failure and ends
// the old remediation when its node recovers.
func TestUpgradeFromThePreviousReleaseCarriesOn(t *testing.T) {
	dir, previousBinary := framework.BuildRelease(t, previousRelease, previousCommit)
	root := controlplane.RepoRoot()

	out, err := env.Cluster.Kubectl("apply", "-k", filepath.Join(dir, "manifests"))
	require.NoError(t, err, out)
	out, err = env.Cluster.Kubectl("apply", "-f", filepath.Join(root, "test/crds/rbac"))
	require.NoError(t, err, out)
	aggregate(t)
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 4)
	env.CreateNHC(t, scenario, nil)

	previous := env.StartAsDeployed(t, previousRelease, previousBinary)
	env.Fail(t, time.Hour, nodes[0], nodes[1])
	inFlight := remediationOf(t, nodes[0])
	remediationOf(t, nodes[1])
	env.Recover(t, nodes[1])
	framework.Eventually(t, 30*time.Second, "the recovered node's remediation ended and recorded", func() bool {
		return len(env.Remediations(t, scenario)[nodes[1]]) == 0 && finished(t, nodes[1])
	})
	require.NoError(t, previous.Stop())
	history := env.GetNHC(t, scenario).Status.RemediationHistory

	// The release file.
	out, err = env.Cluster.Kubectl("apply", "-k", filepath.Join(root, "manifests"))
	require.NoError(t, err, out)
	aggregate(t)
	upgraded := env.StartAsDeployed(t, "release-file", env.Binary)
	env.Fail(t, time.Hour, nodes[2])
	inFlight2 := remediationOf(t, nodes[2])
	carriedOver(t, nodes[0], inFlight, history)
	env.Recover(t, nodes[0])
	framework.Eventually(t, 30*time.Second, "the previous release's remediation ended by the new controller", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 0 && finished(t, nodes[0])
	})
	require.NoError(t, upgraded.Stop())
	history = env.GetNHC(t, scenario).Status.RemediationHistory

	// The chart, over the plain install.
	out, err = env.Cluster.Helm("install", "nhc", filepath.Join(root, "charts/nhc-controller"),
		"--namespace", framework.InstallNamespace, "--take-ownership", "--force-conflicts")
	require.NoError(t, err, out)
	aggregate(t)
	charted := env.StartAsDeployed(t, "chart", env.Binary)
	defer func() { assert.NoError(t, charted.Stop()) }()
	env.Fail(t, time.Hour, nodes[3])
	remediationOf(t, nodes[3])
	carriedOver(t, nodes[2], inFlight2, history)
	env.Recover(t, nodes[2], nodes[3])
	framework.Eventually(t, 30*time.Second, "every remediation ended", func() bool {
		return len(env.Remediations(t, scenario)) == 0 && finished(t, nodes[2]) && finished(t, nodes[3])
	})
}

// aggregate fills the remediators' aggregated ClusterRole, as
// kube-controller-manager would after each install: this control plane has
// none, and an install writes the role's rules empty.
func aggregate(t *testing.T) {
	env.AggregateClusterRoles(t, "nhc-controller-remediators")
}

// remediationOf waits for the one remediation of a node and returns its UID.
func remediationOf(t *testing.T, node string) types.UID {
	t.Helper()
	framework.Eventually(t, 30*time.Second, "a remediation of "+node, func() bool {
		return len(env.Remediations(t, scenario)[node]) == 1
	})
	return env.Remediations(t, scenario)[node][0].GetUID()
}

// finished says whether the history records a node's remediation as ended.
func finished(t *testing.T, node string) bool {
	for _, record := range env.GetNHC(t, scenario).Status.RemediationHistory {
		if record.TargetName == node && record.Finished != nil {
			return true
		}
	}
	return false
}

// carriedOver asserts, once the new controller has acted on a new failure,
// that a remediation in flight across the upgrade is the same resource,
// alone, under the same node lease, and that no history record was lost.
func carriedOver(t *testing.T, node string, uid types.UID, history []v1alpha1.RemediationRecord) {
	t.Helper()
	remediations := env.Remediations(t, scenario)[node]
	require.Len(t, remediations, 1, "no second remediation of %s", node)
	assert.Equal(t, uid, remediations[0].GetUID(), "the same remediation of %s", node)
	lease, err := env.Kube.CoordinationV1().Leases(nodeleases.DefaultNamespace).Get(t.Context(), "node-"+node, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "NodeHealthCheck-"+scenario, *lease.Spec.HolderIdentity)
	now := env.GetNHC(t, scenario).Status.RemediationHistory
	for _, record := range history {
		if record.Finished != nil {
			assert.Contains(t, now, record, "a finished record kept as it was")
			continue
		}
		assert.True(t, slices.ContainsFunc(now, func(r v1alpha1.RemediationRecord) bool {
			return r.TargetName == record.TargetName && r.Started.Equal(&record.Started)
		}), "the record of the remediation in flight on %s kept", record.TargetName)
	}
}
