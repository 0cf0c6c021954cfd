package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// remediated returns the nodes of a NodeHealthCheck with a remediation.
func remediated(t *testing.T, nhc string) map[string]bool {
	nodes := map[string]bool{}
	for node := range env.Remediations(t, nhc) {
		nodes[node] = true
	}
	return nodes
}

func statusOf(t *testing.T, nhc string) v1alpha1.NodeHealthCheckStatus {
	return env.GetNHC(t, nhc).Status
}

func TestSelectorExcludesNodes(t *testing.T) {
	t.Parallel()
	const scenario = "selector"
	env.CreateTemplate(t, scenario, nil)
	workers := env.CreateNodes(t, scenario, 2, framework.WithLabel("role", "worker"))
	infra := env.CreateNode(t, scenario, "selector-infra", framework.WithLabel("role", "infra"))
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector.MatchLabels["role"] = "worker"
	})
	env.Fail(t, time.Hour, infra.Name)
	framework.Eventually(t, 10*time.Second, "2 observed nodes", func() bool {
		s := statusOf(t, scenario)
		return s.ObservedNodes != nil && *s.ObservedNodes == 2 && *s.HealthyNodes == 2
	})
	framework.Consistently(t, 2*time.Second, "no remediation of the unselected node", func() bool { return len(remediated(t, scenario)) == 0 })

	// A worker that loses its label leaves the selector: the NodeHealthCheck hears of it.
	env.UpdateNode(t, workers[1], func(n *corev1.Node) { delete(n.Labels, "role") })
	framework.Eventually(t, 5*time.Second, "1 observed node", func() bool { return *statusOf(t, scenario).ObservedNodes == 1 })
}

func TestMinHealthyAndMaxUnhealthy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		nodes    int
		budget   func(*v1alpha1.NodeHealthCheckSpec)
		// failing nodes exceed the budget; after one recovers, the rest fit.
		failing int
	}{
		{"min-integer", 5, func(s *v1alpha1.NodeHealthCheckSpec) { s.MinHealthy = ptr.To(intstr.FromInt32(3)) }, 3},
		{"min-percent", 5, func(s *v1alpha1.NodeHealthCheckSpec) { s.MinHealthy = ptr.To(intstr.FromString("51%")) }, 3},
		{"max-unhealthy", 5, func(s *v1alpha1.NodeHealthCheckSpec) { s.MinHealthy, s.MaxUnhealthy = nil, ptr.To(intstr.FromInt32(2)) }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			env.CreateTemplate(t, tc.scenario, nil)
			nodes := env.CreateNodes(t, tc.scenario, tc.nodes)
			// The nodes fail before the NodeHealthCheck exists: failing them one
			// by one would rightly remediate the first while the budget allows.
			env.Fail(t, time.Hour, nodes[:tc.failing]...)
			env.CreateNHC(t, tc.scenario, tc.budget)
			framework.Eventually(t, 10*time.Second, "the unhealthy nodes to be listed", func() bool {
				return len(statusOf(t, tc.scenario).UnhealthyNodes) == tc.failing
			})
			framework.Consistently(t, 2*time.Second, "no remediation beyond the budget", func() bool { return len(remediated(t, tc.scenario)) == 0 })
			s := statusOf(t, tc.scenario)
			assert.Equal(t, v1alpha1.PhaseEnabled, s.Phase)
			assert.Contains(t, s.Reason, "unhealthy nodes wait")

			env.Recover(t, nodes[0])
			framework.Eventually(t, 10*time.Second, "the others to be remediated", func() bool {
				r := remediated(t, tc.scenario)
				return len(r) == tc.failing-1 && !r[nodes[0]]
			})
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	const scenario = "pause"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = []string{"upgrade by @admin"} })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the phase to be Paused", func() bool {
		s := statusOf(t, scenario)
		return s.Phase == v1alpha1.PhasePaused && len(s.UnhealthyNodes) == 1
	})
	s := statusOf(t, scenario)
	assert.Equal(t, "NHC is paused: upgrade by @admin", s.Reason)
	assert.Equal(t, int32(3), *s.ObservedNodes, "counters are truthful while paused")
	framework.Consistently(t, 2*time.Second, "no remediation while paused", func() bool { return len(remediated(t, scenario)) == 0 })

	env.UpdateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = nil })
	framework.Eventually(t, 5*time.Second, "a remediation after resuming", func() bool { return remediated(t, scenario)[nodes[0]] })
}

func TestExcludeLabel(t *testing.T) {
	t.Parallel()
	const scenario = "exclude"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "true" })
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 10*time.Second, "the excluded node to be listed", func() bool { return len(statusOf(t, scenario).UnhealthyNodes) == 1 })
	framework.Consistently(t, 2*time.Second, "no remediation of an excluded node", func() bool { return len(remediated(t, scenario)) == 0 })

	env.UpdateNode(t, nodes[0], func(n *corev1.Node) { delete(n.Labels, v1alpha1.ExcludeFromRemediationLabel) })
	framework.Eventually(t, 5*time.Second, "a remediation once the label is gone", func() bool { return remediated(t, scenario)[nodes[0]] })
}

func TestCustomConditionType(t *testing.T) {
	t.Parallel()
	const scenario = "custom-condition"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{{Type: "KernelDeadlock", Status: corev1.ConditionTrue, Duration: metav1.Duration{Duration: time.Second}}}
	})
	env.SetCondition(t, nodes[1], "KernelDeadlock", corev1.ConditionTrue, 0)
	framework.Eventually(t, 5*time.Second, "a remediation for the node-problem-detector condition", func() bool { return remediated(t, scenario)[nodes[1]] })
	env.SetCondition(t, nodes[1], "KernelDeadlock", corev1.ConditionFalse, 0)
	framework.Eventually(t, 5*time.Second, "its deletion", func() bool { return len(remediated(t, scenario)) == 0 })
}

func TestControlPlaneNodesOneAtATime(t *testing.T) {
	t.Parallel()
	const scenario = "control-plane"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3, framework.ControlPlane)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, 2*time.Hour, nodes[1])
	env.Fail(t, time.Hour, nodes[2])
	framework.Eventually(t, 10*time.Second, "the one unhealthy longer to be remediated", func() bool { return remediated(t, scenario)[nodes[1]] })
	framework.Consistently(t, 2*time.Second, "one control-plane node at a time", func() bool { return len(remediated(t, scenario)) == 1 })
	r := env.Remediations(t, scenario)[nodes[1]][0]
	assert.Contains(t, r.GetLabels(), v1alpha1.ControlPlaneNodeLabel)
	framework.Eventually(t, 5*time.Second, "upstream's skip event", func() bool {
		for _, e := range env.Events(t, scenario) {
			if e.Reason == "RemediationSkipped" && strings.HasSuffix(e.Message,
				"Skipping remediation of "+nodes[2]+" for preventing control plane / etcd quorum loss, going to retry in a minute") {
				return true
			}
		}
		return false
	})

	env.Recover(t, nodes[1])
	framework.Eventually(t, 10*time.Second, "the next control-plane node's turn", func() bool {
		r := remediated(t, scenario)
		return len(r) == 1 && r[nodes[2]]
	})
}

func TestTwoNodeHealthChecksWithDisjointSelectors(t *testing.T) {
	t.Parallel()
	for _, scenario := range []string{"disjoint-a", "disjoint-b"} {
		env.CreateTemplate(t, scenario, nil)
		env.CreateNodes(t, scenario, 2)
		env.CreateNHC(t, scenario, nil)
	}
	env.Fail(t, time.Hour, "disjoint-a-00", "disjoint-b-01")
	framework.Eventually(t, 10*time.Second, "each to remediate its own node", func() bool {
		a, b := remediated(t, "disjoint-a"), remediated(t, "disjoint-b")
		return len(a) == 1 && a["disjoint-a-00"] && len(b) == 1 && b["disjoint-b-01"]
	})
	framework.Eventually(t, 5*time.Second, "each to observe its own nodes", func() bool {
		a, b := statusOf(t, "disjoint-a"), statusOf(t, "disjoint-b")
		return a.ObservedNodes != nil && *a.ObservedNodes == 2 && b.ObservedNodes != nil && *b.ObservedNodes == 2
	})
}
