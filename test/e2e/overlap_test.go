package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// multipleTemplates gives resources names of their own per NodeHealthCheck,
// so that the API server would take a remediation of one node from each.
var multipleTemplates = map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}

// overlapCondition is a NodeHealthCheck's NodesOverlap condition, or nil.
func overlapCondition(t *testing.T, nhc string) *metav1.Condition {
	return meta.FindStatusCondition(statusOf(t, nhc).Conditions, v1alpha1.ConditionNodesOverlap)
}

// overlapEvents counts the NodesOverlap events of a NodeHealthCheck (this
// one, not an earlier one of the same name), repeats included.
func overlapEvents(t *testing.T, nhc string) int {
	uid := env.GetNHC(t, nhc).UID
	n := 0
	for _, e := range env.Events(t, nhc) {
		if e.Reason == "NodesOverlap" && e.InvolvedObject.UID == uid {
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// createYounger creates a NodeHealthCheck younger than older.
// creationTimestamp has one-second precision, and the API server shares this
// machine's clock: the next second makes the two tell apart.
func createYounger(t *testing.T, older *v1alpha1.NodeHealthCheck, scenario string, change func(*v1alpha1.NodeHealthCheckSpec)) {
	t.Helper()
	framework.Eventually(t, 5*time.Second, "a second after "+older.Name+"'s creationTimestamp", func() bool {
		return time.Now().Truncate(time.Second).After(older.CreationTimestamp.Time)
	})
	younger := env.CreateNHC(t, scenario, change)
	require.True(t, younger.CreationTimestamp.After(older.CreationTimestamp.Time), "%s is younger than %s", scenario, older.Name)
}

func TestOverlappingNodeHealthChecksRemediateANodeOnce(t *testing.T) {
	t.Parallel()
	const older, younger, shared = "overlap-old", "overlap-young", "e2e.nhc/overlap"
	env.CreateTemplate(t, older, multipleTemplates)
	env.CreateTemplate(t, younger, multipleTemplates)
	nodes := env.CreateNodes(t, older, 3)
	env.UpdateNode(t, nodes[0], func(n *corev1.Node) { n.Labels[shared] = "yes" })
	env.UpdateNode(t, nodes[1], func(n *corev1.Node) { n.Labels[shared] = "yes" })
	env.CreateNode(t, younger, "overlap-young-00", framework.WithLabel(shared, "yes"))
	createYounger(t, env.CreateNHC(t, older, nil), younger, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{shared: "yes"}}
	})

	framework.Eventually(t, 15*time.Second, "both to report the overlap", func() bool {
		o, y := overlapCondition(t, older), overlapCondition(t, younger)
		return o != nil && o.Status == metav1.ConditionTrue && y != nil && y.Status == metav1.ConditionTrue
	})
	assert.Equal(t, v1alpha1.ReasonNodesOverlap, overlapCondition(t, older).Reason)
	assert.True(t, strings.HasPrefix(overlapCondition(t, older).Message, "2 selected nodes are also selected by NodeHealthChecks overlap-young; "), overlapCondition(t, older).Message)
	assert.True(t, strings.HasPrefix(overlapCondition(t, younger).Message, "2 selected nodes are also selected by NodeHealthChecks overlap-old; "), overlapCondition(t, younger).Message)
	assert.Contains(t, overlapCondition(t, younger).Message, "this one remediates 0, overlap-old remediates 2.")

	// A shared node fails: exactly one remediation, the older one's.
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the older one to remediate the shared node", func() bool { return remediated(t, older)[nodes[0]] })
	framework.Eventually(t, 10*time.Second, "the younger one to say it leaves the node to the older", func() bool {
		return strings.Contains(statusOf(t, younger).Reason, "1 unhealthy nodes wait: 1 left to the NodeHealthChecks that remediate them (overlap-old)")
	})
	framework.Consistently(t, 2*time.Second, "one remediation of the shared node", func() bool {
		return len(env.Remediations(t, older)[nodes[0]]) == 1 && len(remediated(t, younger)) == 0
	})
	s := statusOf(t, younger)
	assert.Equal(t, int32(3), *s.ObservedNodes, "the younger one observes the shared node")
	assert.Equal(t, int32(2), *s.HealthyNodes)
	assert.Equal(t, int32(0), *s.RemediatingNodes, "and claims no remediation of it")

	// kubectl get -o wide shows the overlap.
	out, err := env.Cluster.Kubectl("get", "nhc", older, younger, "-o", "wide")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Equal(t, []string{"NAME", "PHASE", "OBSERVED", "HEALTHY", "REMEDIATING", "STORM", "OVERLAP", "REASON"}, strings.Fields(lines[0])[:8])
	// An empty STORM leaves a gap: the column is found by its position.
	column := strings.Index(lines[0], "OVERLAP")
	for _, line := range lines[1:] {
		assert.True(t, strings.HasPrefix(line[column:], "True "), line)
	}

	// One event each, when the overlap started.
	assert.Equal(t, 1, overlapEvents(t, older))
	assert.Equal(t, 1, overlapEvents(t, younger))

	// The younger one's selector no longer takes the older one's nodes.
	env.UpdateNHC(t, younger, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: younger}}
	})
	framework.Eventually(t, 15*time.Second, "both to report the overlap gone", func() bool {
		o, y := overlapCondition(t, older), overlapCondition(t, younger)
		return o.Status == metav1.ConditionFalse && y.Status == metav1.ConditionFalse
	})
	assert.Equal(t, v1alpha1.ReasonNoOverlap, overlapCondition(t, younger).Reason)
	assert.Equal(t, int32(1), *statusOf(t, younger).ObservedNodes)
	assert.Equal(t, 1, overlapEvents(t, older), "no event when the overlap ends")
	assert.Len(t, remediated(t, older), 1, "the older one's remediation goes on")
	assert.Empty(t, remediated(t, younger), "its own node is healthy")
}

// shareTheNodeUnderRemediation sets up two NodeHealthChecks, the younger
// remediating its one node, then widens the older one's selector to that
// node too, and returns the node once the older one leaves it to the
// younger.
func shareTheNodeUnderRemediation(t *testing.T, older, younger string, templateAnnotations map[string]string) string {
	t.Helper()
	env.CreateTemplate(t, older, templateAnnotations)
	env.CreateTemplate(t, younger, templateAnnotations)
	env.CreateNodes(t, older, 2)
	node := env.CreateNodes(t, younger, 1)[0]
	createYounger(t, env.CreateNHC(t, older, nil), younger, nil)
	env.Fail(t, time.Hour, node)
	framework.Eventually(t, 15*time.Second, "the younger one to remediate its node", func() bool { return remediated(t, younger)[node] })
	env.UpdateNHC(t, older, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: framework.ScenarioLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{older, younger}},
		}}
	})
	framework.Eventually(t, 15*time.Second, "the older one to leave the node to the one remediating it", func() bool {
		return strings.Contains(statusOf(t, older).Reason, "1 left to the NodeHealthChecks that remediate them ("+younger+")")
	})
	return node
}

func TestARemediationInProgressKeepsItsNodeWhenAnotherNodeHealthCheckSelectsIt(t *testing.T) {
	t.Parallel()
	const older, younger = "keep-old", "keep-young"
	node := shareTheNodeUnderRemediation(t, older, younger, multipleTemplates)
	framework.Consistently(t, 2*time.Second, "never two remediations of one node", func() bool {
		return len(remediated(t, older)) == 0 && len(env.Remediations(t, younger)[node]) == 1
	})

	// Once that remediation is over, the older one remediates the node.
	env.Recover(t, node)
	framework.Eventually(t, 15*time.Second, "the remediation to end", func() bool { return len(remediated(t, younger)) == 0 })
	env.Fail(t, time.Hour, node)
	framework.Eventually(t, 15*time.Second, "the older one to remediate the node", func() bool { return remediated(t, older)[node] })
	framework.Consistently(t, 2*time.Second, "and the younger one to leave it", func() bool { return len(remediated(t, younger)) == 0 })
}

// TestANodeThatRelapsesAsItsRemediationEndsGoesToTheOlderOneAtOnce: the
// younger of two NodeHealthChecks that select a node remediates it; the
// node recovers, and fails again, afresh, while its remediator still holds
// the resource with a finalizer. Once the resource is gone, the incident is
// over and the relapse is the older one's: it remediates the node at once,
// without waiting for the younger one's node lease to run out (11 minutes).
func TestANodeThatRelapsesAsItsRemediationEndsGoesToTheOlderOneAtOnce(t *testing.T) {
	t.Parallel()
	const older, younger = "relapse-old", "relapse-young"
	node := shareTheNodeUnderRemediation(t, older, younger, nil)

	first := env.Remediations(t, younger)[node][0]
	name := first.GetName()
	env.SetFinalizers(t, name, "test.medik8s.io/cleanup")
	// Timestamps have one-second precision: a relapse in the second the
	// resource was created would count it as the relapse's own.
	framework.Eventually(t, 5*time.Second, "a second after the resource's creationTimestamp", func() bool {
		return time.Now().Truncate(time.Second).After(first.GetCreationTimestamp().Time)
	})
	env.Recover(t, node)
	framework.Eventually(t, 15*time.Second, "the younger one to see the node recover", func() bool {
		r := env.Remediations(t, younger)[node]
		e := entryOf(statusOf(t, younger), node)
		return len(r) == 1 && r[0].GetDeletionTimestamp() != nil && e != nil && e.ConditionsHealthyTimestamp != nil
	})
	env.Fail(t, 0, node)
	framework.Eventually(t, 15*time.Second, "the younger one to see the node fail again", func() bool {
		return strings.Contains(statusOf(t, younger).Reason, "for their remediation's deletion")
	})
	env.SetFinalizers(t, name)
	framework.Eventually(t, 15*time.Second, "the older one to remediate the node", func() bool { return remediated(t, older)[node] })
	framework.Consistently(t, 2*time.Second, "and the younger one to leave it", func() bool { return len(remediated(t, younger)) == 0 })
}

// entryOf is a node's entry in a status, or nil.
func entryOf(s v1alpha1.NodeHealthCheckStatus, node string) *v1alpha1.UnhealthyNode {
	for _, e := range s.UnhealthyNodes {
		if e != nil && e.Name == node {
			return e
		}
	}
	return nil
}

// TestASharedNodeGoesToTheNodeHealthCheckWhoseConditionsHold: two
// NodeHealthChecks select a node; the older checks only Ready, the younger
// only DiskPressure. The node's disk fills up: the older one would never
// act, so the younger one remediates it instead of waiting on it forever.
func TestASharedNodeGoesToTheNodeHealthCheckWhoseConditionsHold(t *testing.T) {
	t.Parallel()
	const older, younger = "overlap-ready", "overlap-disk"
	env.CreateTemplate(t, older, nil)
	env.CreateTemplate(t, younger, nil)
	nodes := env.CreateNodes(t, older, 3)
	createYounger(t, env.CreateNHC(t, older, nil), younger, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: older}}
		s.UnhealthyConditions = []v1alpha1.UnhealthyCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Duration: metav1.Duration{Duration: 2 * time.Second}}}
	})
	env.SetCondition(t, nodes[0], corev1.NodeDiskPressure, corev1.ConditionTrue, time.Hour)
	framework.Eventually(t, 15*time.Second, "the younger one to remediate the node", func() bool {
		return len(env.Remediations(t, younger)[nodes[0]]) == 1
	})
	framework.Consistently(t, 2*time.Second, "the older one leaves it alone", func() bool { return len(env.Remediations(t, older)) == 0 })
}

// TestASharedNodeGoesToANodeHealthCheckThatCanAct: the older of two
// NodeHealthChecks that select a node cannot act (paused, or disabled: its
// template is missing). The younger one remediates the node instead of
// leaving it to one that does nothing; once the older one can act again,
// the node stays with the one that has resources for it.
func TestASharedNodeGoesToANodeHealthCheckThatCanAct(t *testing.T) {
	t.Parallel()
	cases := []struct {
		older string
		idle  func(*v1alpha1.NodeHealthCheckSpec)
		again func(*v1alpha1.NodeHealthCheckSpec)
	}{
		{"idle-paused", func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = []string{"upgrade"} },
			func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = nil }},
		{"idle-disabled", func(s *v1alpha1.NodeHealthCheckSpec) {
			s.RemediationTemplate = ptr.To(framework.TemplateRef("idle-missing"))
		},
			func(s *v1alpha1.NodeHealthCheckSpec) {
				s.RemediationTemplate = ptr.To(framework.TemplateRef("idle-disabled"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.older, func(t *testing.T) {
			t.Parallel()
			younger := tc.older + "-young"
			env.CreateTemplate(t, tc.older, multipleTemplates)
			env.CreateTemplate(t, younger, multipleTemplates)
			nodes := env.CreateNodes(t, tc.older, 3)
			createYounger(t, env.CreateNHC(t, tc.older, tc.idle), younger, func(s *v1alpha1.NodeHealthCheckSpec) {
				s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: tc.older}}
			})
			env.Fail(t, time.Hour, nodes[0])
			framework.Eventually(t, 15*time.Second, "the younger one to remediate the node", func() bool {
				return len(env.Remediations(t, younger)[nodes[0]]) == 1
			})
			framework.Eventually(t, 10*time.Second, "its overlap condition to say so", func() bool {
				c := overlapCondition(t, younger)
				return c != nil && strings.Contains(c.Message, "this one remediates 3.")
			})

			// The older one can act again: the node stays with the one
			// remediating it.
			env.UpdateNHC(t, tc.older, tc.again)
			framework.Eventually(t, 15*time.Second, "the older one to leave the node to the one remediating it", func() bool {
				return strings.Contains(statusOf(t, tc.older).Reason, "left to the NodeHealthCheck")
			})
			framework.Consistently(t, 2*time.Second, "never two remediations of one node", func() bool {
				return len(env.Remediations(t, tc.older)) == 0 && len(env.Remediations(t, younger)[nodes[0]]) == 1
			})
		})
	}
}
