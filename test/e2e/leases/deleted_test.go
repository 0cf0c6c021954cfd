package leases

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// A deleted NodeHealthCheck's lease holds its node while the remediation it
// started goes on, and is released once that is gone: another
// NodeHealthCheck that selects the node remediates it at once, not when the
// lease would have run out (5 minutes here).
func TestADeletedNodeHealthChecksLeaseIsReleasedOnceItsRemediationIsGone(t *testing.T) {
	t.Parallel()
	const scenario = "deleted-nhc"
	const successor = scenario + "-successor"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	longLease := func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector.MatchLabels = map[string]string{framework.ScenarioLabel: scenario}
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(scenario), Order: 0, Timeout: metav1.Duration{Duration: 5 * time.Minute}}}
	}
	env.CreateNHC(t, scenario, longLease)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "remediated with the lease taken", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+scenario
	})
	running := env.Remediations(t, scenario)[nodes[0]][0].GetName()

	env.DeleteNHC(t, scenario)
	env.CreateNHC(t, successor, longLease)
	framework.Consistently(t, 3*time.Second, "the lease holds while the deleted NodeHealthCheck's remediation runs", func() bool {
		return holder(t, nodes[0]) == "NodeHealthCheck-"+scenario && len(env.Remediations(t, successor)) == 0
	})

	// Its remediator lets go, and the garbage collector deletes it.
	err := env.Dynamic.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).Delete(context.Background(), running, metav1.DeleteOptions{})
	require.NoError(t, err)
	framework.Eventually(t, 10*time.Second, "the other NodeHealthCheck remediates the node with the lease", func() bool {
		return len(env.Remediations(t, successor)[nodes[0]]) == 1 && holder(t, nodes[0]) == "NodeHealthCheck-"+successor
	})
}
