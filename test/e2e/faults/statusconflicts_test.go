package faults

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestAStatusWrittenBehindASilentWatchIsRecordedAtOnce: the controller's
// status write lands but its answer is lost, while its watch of
// NodeHealthChecks stays silent, so its next write conflicts. The status is
// the controller's memory of the incident: it reads the NodeHealthCheck at
// the API server and goes on from there, the watch still silent. The
// status lists the node's remediation within seconds, then its failure;
// when the remediator deletes the failed resource, the step is not run
// again.
func TestAStatusWrittenBehindASilentWatchIsRecordedAtOnce(t *testing.T) {
	const scenario = "status-after-conflicts"
	nodes := startSeeingThreeNodes(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef(scenario), Order: 1, Timeout: metav1.Duration{Duration: time.Hour}},
		}
	})

	proxy.HoldWatches("nodehealthchecks", true)
	t.Cleanup(func() { proxy.HoldWatches("nodehealthchecks", false) })
	proxy.LoseUpdates("nodehealthchecks/" + scenario + "/status")
	t.Cleanup(func() { proxy.LoseUpdates("") })
	env.Fail(t, 0, nodes[0])
	framework.Eventually(t, 20*time.Second, "the node's remediation", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1
	})
	name := env.Remediations(t, scenario)[nodes[0]][0].GetName()
	proxy.LoseUpdates("")
	recorded := func() *v1alpha1.Remediation {
		for _, entry := range env.GetNHC(t, scenario).Status.UnhealthyNodes {
			if entry.Name == nodes[0] && len(entry.Remediations) == 1 {
				return entry.Remediations[0]
			}
		}
		return nil
	}
	framework.Eventually(t, 10*time.Second, "the status to list the remediation, the watch still silent", func() bool {
		return recorded() != nil
	})

	env.SetRemediationCondition(t, name, v1alpha1.SucceededCondition, "False")
	framework.Eventually(t, 10*time.Second, "the status to record the step's failure", func() bool {
		r := recorded()
		return r != nil && r.TimedOut != nil
	})
	env.DeleteRemediation(t, name)
	framework.Consistently(t, 5*time.Second, "the step that failed is not run again", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 0
	})
}
