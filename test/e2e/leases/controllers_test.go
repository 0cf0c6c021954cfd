package leases

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestTwoControllersTwoHoldersOneRemediation runs a second controller beside
// the first, without leader election, and two NodeHealthChecks selecting the
// same nodes: four actors under two holder identities race for each failing
// node, and each node gets exactly one remediation, from the holder of its
// lease. It is not parallel: the second controller would act for the other
// tests too.
func TestTwoControllersTwoHoldersOneRemediation(t *testing.T) {
	second, err := env.StartController("leases-second", leaseFlags...)
	require.NoError(t, err)
	defer func() {
		if err := second.Stop(); err != nil || t.Failed() {
			second.DumpLog(t.Output())
		}
	}()
	nodes := env.CreateNodes(t, "pair", 5, framework.WithLabel("pair", "true"))
	for _, name := range []string{"pair-a", "pair-b"} {
		env.CreateTemplate(t, name, nil)
		env.CreateNHC(t, name, func(s *v1alpha1.NodeHealthCheckSpec) {
			s.Selector.MatchLabels = map[string]string{"pair": "true"}
			s.RemediationTemplate = nil
			s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(name), Timeout: metav1.Duration{Duration: 5 * time.Minute}}}
		})
	}
	failing := nodes[:3]
	env.Fail(t, time.Hour, failing...)

	// seen is the last state looked at, for the failure message: whether a
	// wait ran out or a node got two remediations.
	var seen string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s", seen)
		}
	})
	oneEach := func() bool {
		a, b := env.Remediations(t, "pair-a"), env.Remediations(t, "pair-b")
		seen = ""
		for _, node := range failing {
			seen += fmt.Sprintf("%s: pair-a %d, pair-b %d, lease %q; ", node, len(a[node]), len(b[node]), holder(t, node))
		}
		for _, node := range failing {
			if len(a[node])+len(b[node]) != 1 {
				return false
			}
			owner := "pair-a"
			if len(b[node]) == 1 {
				owner = "pair-b"
			}
			if holder(t, node) != "NodeHealthCheck-"+owner {
				return false
			}
		}
		return len(a)+len(b) == len(failing)
	}
	framework.Eventually(t, 15*time.Second, "each failing node remediated once", oneEach)
	framework.Consistently(t, 5*time.Second, "never a second remediation of a node", oneEach)
}
