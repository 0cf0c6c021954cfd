package faults

import (
	"testing"
	"time"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// conflictsFor is how long the status writes conflict: long enough that
// client-go's default back-off, doubling from 5 ms, would put the next try
// more than two minutes past it (its 15th try at 164 s, the 16th at 328 s).
const conflictsFor = 170 * time.Second

// TestAStatusWrittenBehindASilentWatchIsRecordedSoonAfter: the controller's
// status write lands but its answer is lost, while its watch of
// NodeHealthChecks is silent, so every later write is a conflict; a node's
// remediation starts meanwhile. Once the watch goes on, the status lists
// the remediation within a minute, not minutes later after a back-off grown
// through the conflicts.
func TestAStatusWrittenBehindASilentWatchIsRecordedSoonAfter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: three minutes of conflicts")
	}
	const scenario = "status-after-conflicts"
	nodes := startSeeingThreeNodes(t, scenario, nil)

	proxy.HoldWatches("nodehealthchecks", true)
	t.Cleanup(func() { proxy.HoldWatches("nodehealthchecks", false) })
	proxy.LoseUpdates("nodehealthchecks/" + scenario + "/status")
	t.Cleanup(func() { proxy.LoseUpdates("") })
	env.Fail(t, 0, nodes[0])
	framework.Eventually(t, 20*time.Second, "the node's remediation", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	proxy.LoseUpdates("")
	time.Sleep(conflictsFor)
	if s := env.GetNHC(t, scenario).Status; len(s.UnhealthyNodes) > 0 && len(s.UnhealthyNodes[0].Remediations) > 0 {
		t.Fatalf("the status recorded the remediation while every write conflicted: the test shows nothing")
	}

	proxy.HoldWatches("nodehealthchecks", false)
	released := time.Now()
	framework.Eventually(t, time.Minute, "the status to list the remediation once the watch goes on", func() bool {
		for _, entry := range env.GetNHC(t, scenario).Status.UnhealthyNodes {
			if entry.Name == nodes[0] && len(entry.Remediations) > 0 {
				return true
			}
		}
		return false
	})
	t.Logf("recorded %s after the watch went on", time.Since(released).Round(time.Second))
}
