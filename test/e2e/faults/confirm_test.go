package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestANodeRecoveredAtTheAPIServerIsNotRemediated: a node fails, and
// recovers a moment before its condition's duration passes, while the
// controller's node watch lags behind (an overloaded API server). The cache
// still shows it unhealthy at the deadline; the API server does not. No
// remediation starts, and the controller says why.
func TestANodeRecoveredAtTheAPIServerIsNotRemediated(t *testing.T) {
	const scenario = "recovered-unseen"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		for i := range s.UnhealthyConditions {
			s.UnhealthyConditions[i].Duration = metav1.Duration{Duration: 4 * time.Second}
		}
	})
	startController(t, scenario)
	env.Fail(t, 0, nodes[0])
	framework.Eventually(t, 10*time.Second, "the controller to see the node fail", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.HealthyNodes != nil && *s.HealthyNodes == 2
	})

	proxy.HoldNodeWatches(true)
	t.Cleanup(func() { proxy.HoldNodeWatches(false) })
	env.Recover(t, nodes[0])
	framework.Eventually(t, 15*time.Second, "the create not confirmed at the deadline", func() bool {
		for _, e := range env.Events(t, scenario) {
			if e.Reason == "RemediationNotConfirmed" && strings.Contains(e.Message, "Remediation of node "+nodes[0]+" not started: at the API server,") {
				return true
			}
		}
		return false
	})
	assert.Empty(t, env.Remediations(t, scenario), "no remediation of a node the API server shows recovered")

	proxy.HoldNodeWatches(false)
	framework.Eventually(t, 10*time.Second, "the node healthy once the cache catches up", func() bool {
		return len(env.GetNHC(t, scenario).Status.UnhealthyNodes) == 0
	})
	assert.Empty(t, env.Remediations(t, scenario))
}

// TestAnEscalationOfANodeRecoveredAtTheAPIServerIsNotCreated: a node under
// remediation recovers while the controller's node watch lags behind, and
// its remediator gives up on the first step at that moment. The cache still
// shows the node unhealthy; the API server does not: the next, heavier step
// is not created, and the controller says why.
func TestAnEscalationOfANodeRecoveredAtTheAPIServerIsNotCreated(t *testing.T) {
	const scenario = "escalation-unseen"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	env.CreateTemplate(t, scenario+"-soft", multi)
	env.CreateTemplate(t, scenario+"-hard", multi)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef(scenario + "-soft"), Order: 1, Timeout: metav1.Duration{Duration: time.Hour}},
			{RemediationTemplate: framework.TemplateRef(scenario + "-hard"), Order: 2, Timeout: metav1.Duration{Duration: time.Hour}},
		}
	})
	startController(t, scenario)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the first step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	soft := env.Remediations(t, scenario)[nodes[0]][0].GetName()

	proxy.HoldNodeWatches(true)
	t.Cleanup(func() { proxy.HoldNodeWatches(false) })
	env.Recover(t, nodes[0])
	env.SetRemediationCondition(t, soft, v1alpha1.SucceededCondition, "False")
	framework.Eventually(t, 15*time.Second, "the next step not confirmed", func() bool {
		for _, e := range env.Events(t, scenario) {
			if e.Reason == "RemediationNotConfirmed" && strings.Contains(e.Message, "Remediation of node "+nodes[0]+" not started: at the API server,") {
				return true
			}
		}
		return false
	})
	assert.Len(t, env.Remediations(t, scenario)[nodes[0]], 1, "no next step for a node the API server shows recovered")

	proxy.HoldNodeWatches(false)
	framework.Eventually(t, 10*time.Second, "the node healthy once the cache catches up", func() bool {
		return len(env.GetNHC(t, scenario).Status.UnhealthyNodes) == 0
	})
	assert.Empty(t, env.Remediations(t, scenario))
}

// TestAPausedNodeHealthCheckUnseenByTheControllerDoesNotRemediate: a node
// fails, and the operator pauses its NodeHealthCheck while the
// controller's watch of NodeHealthChecks has gone silent (its connection
// open, nothing sent). At the node's deadline the cache still shows the
// NodeHealthCheck unpaused, the API server does not: no remediation
// starts, and the controller says why. Its status write then conflicts,
// and it reads the NodeHealthCheck at the API server: the status shows the
// pause while the watch is still silent.
func TestAPausedNodeHealthCheckUnseenByTheControllerDoesNotRemediate(t *testing.T) {
	const scenario = "paused-unseen"
	nodes := startSeeingThreeNodes(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		for i := range s.UnhealthyConditions {
			s.UnhealthyConditions[i].Duration = metav1.Duration{Duration: 4 * time.Second}
		}
	})
	env.Fail(t, 0, nodes[0])
	framework.Eventually(t, 3*time.Second, "the failure counted", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.HealthyNodes != nil && *s.HealthyNodes == 2
	})

	proxy.HoldWatches("nodehealthchecks", true)
	t.Cleanup(func() { proxy.HoldWatches("nodehealthchecks", false) })
	env.UpdateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = []string{"maintenance"} })
	framework.Eventually(t, 20*time.Second, "the create not confirmed", func() bool {
		for _, e := range env.Events(t, scenario) {
			if e.Reason == "RemediationNotConfirmed" && strings.Contains(e.Message, "Remediation of node "+nodes[0]+" not started: at the API server, the NodeHealthCheck's spec changed") {
				return true
			}
		}
		return false
	})
	assert.Empty(t, env.Remediations(t, scenario), "no remediation by a paused NodeHealthCheck")
	framework.Eventually(t, 10*time.Second, "the pause read at the API server, the watch still silent", func() bool {
		return env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhasePaused
	})

	proxy.HoldWatches("nodehealthchecks", false)
	framework.Consistently(t, 3*time.Second, "no remediation once the watch goes on", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
}
