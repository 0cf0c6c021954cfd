package ha

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// multi gives the template's resources the names of the several-per-node
// scheme, the names upstream generates at random, where a second create would
// not fail but duplicate.
var multi = map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}

// uids maps each node to the UIDs of its remediations.
func uids(t *testing.T, nhc string) map[string][]types.UID {
	byNode := map[string][]types.UID{}
	for node, resources := range env.Remediations(t, nhc) {
		for _, r := range resources {
			byNode[node] = append(byNode[node], r.GetUID())
		}
	}
	return byNode
}

func dumpOnFailure(t *testing.T, controllers ...*framework.Controller) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range controllers {
				c.DumpLog(os.Stderr)
			}
		}
	})
}

func TestSIGKILLMidRemediationNeitherDuplicatesNorLoses(t *testing.T) {
	const scenario = "crash"
	env.CreateTemplate(t, scenario, multi)
	nodes := env.CreateNodes(t, scenario, 6)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.HealthyDelay = &metav1.Duration{Duration: -time.Second}
	})
	first, err := env.StartController("crash-1", "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, first)
	env.Fail(t, time.Hour, nodes[:3]...)
	framework.Eventually(t, 15*time.Second, "three remediations", func() bool { return len(uids(t, scenario)) == 3 })
	framework.Eventually(t, 5*time.Second, "the status to list them", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.RemediatingNodes != nil && *s.RemediatingNodes == 3
	})
	before := uids(t, scenario)
	statusBefore := env.GetNHC(t, scenario).Status

	// Mid-remediation: one node recovers (its delay never ends), another fails.
	first.Kill()
	env.Recover(t, nodes[0])
	env.Fail(t, time.Hour, nodes[3])

	second, err := env.StartController("crash-2", "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, second)
	defer func() { assert.NoError(t, second.Stop()) }()
	framework.Eventually(t, 15*time.Second, "the new failure to be remediated", func() bool { return len(uids(t, scenario)) == 4 })
	framework.Consistently(t, 3*time.Second, "no duplicate", func() bool {
		after := uids(t, scenario)
		for _, n := range nodes[:3] {
			if len(after[n]) != 1 || after[n][0] != before[n][0] {
				return false
			}
		}
		return len(after[nodes[3]]) == 1
	})
	status := env.GetNHC(t, scenario).Status
	for _, entry := range statusBefore.UnhealthyNodes {
		found := false
		for _, now := range status.UnhealthyNodes {
			if now.Name == entry.Name {
				found = true
				assert.Equal(t, entry.Remediations[0].Resource.UID, now.Remediations[0].Resource.UID, "status intact for %s", entry.Name)
				assert.Equal(t, entry.Remediations[0].Started.UTC(), now.Remediations[0].Started.UTC())
			}
		}
		assert.True(t, found, "node %s still in the status", entry.Name)
	}
	assert.Equal(t, int32(4), *status.RemediatingNodes)
	for _, entry := range status.UnhealthyNodes {
		if entry.Name == nodes[0] {
			assert.Equal(t, true, *entry.HealthyDelayed, "the recovered node waits for confirmation")
		}
	}
}

func TestLeaderElectionFailover(t *testing.T) {
	const scenario = "failover"
	env.CreateTemplate(t, scenario, multi)
	nodes := env.CreateNodes(t, scenario, 6)
	env.CreateNHC(t, scenario, nil)
	election := []string{"--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-e2e",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}
	a, err := env.StartController("replica-a", election...)
	require.NoError(t, err)
	b, err := env.StartController("replica-b", election...)
	require.NoError(t, err)
	dumpOnFailure(t, a, b)
	replicas := map[string]*framework.Controller{"replica-a": a, "replica-b": b}

	leader := func() *framework.Controller {
		lease, err := env.Kube.CoordinationV1().Leases("default").Get(context.Background(), "nhc-e2e", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return nil
		}
		for _, r := range replicas {
			if !r.Exited() && strings.Contains(r.Log(), `"Became the leader" identity="`+*lease.Spec.HolderIdentity+`"`) {
				return r
			}
		}
		return nil
	}
	framework.Eventually(t, 20*time.Second, "a leader", func() bool { return leader() != nil })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the leader to remediate", func() bool { return len(uids(t, scenario)) == 1 })
	old := leader()
	var standby *framework.Controller
	for _, r := range replicas {
		if r != old {
			standby = r
		}
	}
	assert.NotContains(t, standby.Log(), "Created remediation", "only the leader acts")

	old.Kill()
	env.Fail(t, time.Hour, nodes[1])
	framework.Eventually(t, 20*time.Second, "the other replica to take over and remediate", func() bool { return len(uids(t, scenario)) == 2 })
	assert.Equal(t, standby, leader())
	framework.Consistently(t, 3*time.Second, "no duplicate after the failover", func() bool {
		for _, u := range uids(t, scenario) {
			if len(u) != 1 {
				return false
			}
		}
		return true
	})
	require.NoError(t, standby.Stop(), "a graceful stop")
	lease, err := env.Kube.CoordinationV1().Leases("default").Get(context.Background(), "nhc-e2e", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "", "the lease is released on SIGTERM")
}

func TestRestartMidRemediationCompletesTheSameHistoryRecord(t *testing.T) {
	const scenario = "history-restart"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, nil)
	first, err := env.StartController("history-1", "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, first)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "an ongoing record", func() bool {
		h := env.GetNHC(t, scenario).Status.RemediationHistory
		return len(h) == 1 && h[0].Outcome == v1alpha1.OutcomeRemediating
	})
	ongoing := env.GetNHC(t, scenario).Status.RemediationHistory[0]

	first.Kill()
	env.Recover(t, nodes[0])
	second, err := env.StartController("history-2", "--leader-elect=false")
	require.NoError(t, err)
	dumpOnFailure(t, second)
	defer func() { assert.NoError(t, second.Stop()) }()
	framework.Eventually(t, 15*time.Second, "the record to finish", func() bool {
		h := env.GetNHC(t, scenario).Status.RemediationHistory
		return len(h) == 1 && h[0].Finished != nil
	})
	r := env.GetNHC(t, scenario).Status.RemediationHistory[0]
	assert.Equal(t, v1alpha1.OutcomeRecovered, r.Outcome)
	assert.Equal(t, ongoing.Detected, r.Detected, "the same record")
	assert.Equal(t, ongoing.Started, r.Started, "the same record")
	assert.Equal(t, ongoing.Steps, r.Steps)
}
