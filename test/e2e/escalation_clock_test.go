package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestEscalationKeepsItsClockWhenAStepsResourceIsDeleted: a remediator (or
// a user) that deletes a running step's resource gets it created again, but
// the step's timeout still counts from its first start: the next step
// comes one timeout after the node's first remediation, not after the last
// deletion.
func TestEscalationKeepsItsClockWhenAStepsResourceIsDeleted(t *testing.T) {
	t.Parallel()
	const scenario = "escalation-clock"
	multi := map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	for _, name := range []string{"clock-first", "clock-second"} {
		env.CreateTemplate(t, name, multi)
	}
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: framework.TemplateRef("clock-first"), Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: framework.TemplateRef("clock-second"), Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the first step", func() bool { return len(env.Remediations(t, scenario)[nodes[0]]) == 1 })
	first := env.Remediations(t, scenario)[nodes[0]][0]
	started := first.GetCreationTimestamp()

	// Deleted twice, 25 s apart: each time the step is created again.
	for range 2 {
		time.Sleep(25 * time.Second)
		current := env.Remediations(t, scenario)[nodes[0]]
		require.Len(t, current, 1)
		require.NoError(t, env.Dynamic.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).
			Delete(context.Background(), current[0].GetName(), metav1.DeleteOptions{}))
		framework.Eventually(t, 10*time.Second, "the step created again", func() bool {
			again := env.Remediations(t, scenario)[nodes[0]]
			return len(again) == 1 && again[0].GetUID() != current[0].GetUID()
		})
		framework.Eventually(t, 10*time.Second, "the status to keep the step's first start", func() bool {
			s := statusOf(t, scenario)
			return len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 1 &&
				s.UnhealthyNodes[0].Remediations[0].Started.Equal(&started)
		})
	}

	// The second step comes a minute after the first start, not after the
	// last deletion (which would be about 110 s after it).
	framework.Eventually(t, time.Until(started.Add(90*time.Second)), "the second step, on the first step's clock", func() bool {
		for _, r := range env.Remediations(t, scenario)[nodes[0]] {
			if r.GetAnnotations()[v1alpha1.TemplateNameAnnotation] == "clock-second" {
				return true
			}
		}
		return false
	})
	// The status is written right after the create that the test saw.
	framework.Eventually(t, 10*time.Second, "the status to record both steps", func() bool {
		s := statusOf(t, scenario)
		return len(s.UnhealthyNodes) == 1 && len(s.UnhealthyNodes[0].Remediations) == 2
	})
	rems := statusOf(t, scenario).UnhealthyNodes[0].Remediations
	assert.Equal(t, "clock-first", rems[0].TemplateName)
	assert.NotNil(t, rems[0].TimedOut)
	assert.True(t, rems[0].Started.Equal(&started), "the first step started when its first resource was created")

	env.Recover(t, nodes[0])
	framework.Eventually(t, 10*time.Second, "all steps deleted", func() bool { return len(env.Remediations(t, scenario)) == 0 })
}
