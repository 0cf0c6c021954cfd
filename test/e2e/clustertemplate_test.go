package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestACreatedClusterScopedTemplateWakesItsNodeHealthCheck: the reference to
// a cluster-scoped template carries a namespace, as the spec requires; the
// template, which has none, wakes the NodeHealthCheck that waited for it
// when it is created, and its unhealthy node is remediated at once, not
// when something else happens to wake the NodeHealthCheck.
func TestACreatedClusterScopedTemplateWakesItsNodeHealthCheck(t *testing.T) {
	t.Parallel()
	const scenario = "cluster-template-later"
	ref := framework.ClusterTemplateRef(scenario)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.RemediationTemplate = &ref })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "disabled: the template does not exist", func() bool {
		return statusOf(t, scenario).Phase == v1alpha1.PhaseDisabled
	})
	// Past the sync that disabled it and any follow-up it asked for.
	framework.Consistently(t, 2*time.Second, "disabled while the template is missing", func() bool {
		return statusOf(t, scenario).Phase == v1alpha1.PhaseDisabled && len(env.ClusterRemediations(t, nodes[0])) == 0
	})

	env.CreateClusterTemplate(t, scenario)
	framework.Eventually(t, 3*time.Second, "the node remediated once the template exists", func() bool {
		return len(env.ClusterRemediations(t, nodes[0])) == 1 && statusOf(t, scenario).Phase == v1alpha1.PhaseRemediating
	})
}

// TestOneClusterScopedTemplateNamedByTwoStepsIsRefused: two escalation
// steps whose references to one cluster-scoped template carry different
// namespaces name one object, and would create one remediation for both:
// the NodeHealthCheck is disabled and says so, and remediates no node.
func TestOneClusterScopedTemplateNamedByTwoStepsIsRefused(t *testing.T) {
	t.Parallel()
	const scenario = "cluster-template-twice"
	first := env.CreateClusterTemplate(t, scenario)
	second := first
	second.Namespace = "elsewhere"
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{
			{RemediationTemplate: first, Order: 1, Timeout: metav1.Duration{Duration: time.Minute}},
			{RemediationTemplate: second, Order: 2, Timeout: metav1.Duration{Duration: time.Minute}},
		}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "disabled: both steps name one template", func() bool {
		s := statusOf(t, scenario)
		return s.Phase == v1alpha1.PhaseDisabled && strings.Contains(s.Reason,
			"escalatingRemediations reference template ClusterRemediationTemplate "+scenario+" twice: both steps would create the same remediation")
	})
	framework.Consistently(t, 2*time.Second, "no remediation", func() bool {
		return len(env.ClusterRemediations(t, nodes[0])) == 0
	})
}
