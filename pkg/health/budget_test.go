package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

func TestMinHealthy(t *testing.T) {
	str, num := intstr.FromString, intstr.FromInt32
	cases := []struct {
		name     string
		min, max *intstr.IntOrString
		observed int
		want     int
		wantErr  string
	}{
		// The upstream table (reference §2.5), 10 nodes.
		{"min 8", ptr.To(num(8)), nil, 10, 8, ""},
		{"min 80%", ptr.To(str("80%")), nil, 10, 8, ""},
		{"min 75% rounds up", ptr.To(str("75%")), nil, 10, 8, ""},
		{"min 0%", ptr.To(str("0%")), nil, 10, 0, ""},
		{"min 100%", ptr.To(str("100%")), nil, 10, 10, ""},
		{"min -3", ptr.To(num(-3)), nil, 10, 0, "minHealthy must not be negative: -3"},
		{"min -30%", ptr.To(str("-30%")), nil, 10, 0, "minHealthy must be a percentage from 0% to 100%"},
		{"max 8", nil, ptr.To(num(8)), 10, 2, ""},
		{"max 80%", nil, ptr.To(str("80%")), 10, 2, ""},
		{"max 75% rounds up, so it allows more", nil, ptr.To(str("75%")), 10, 2, ""},
		{"max 0%", nil, ptr.To(str("0%")), 10, 10, ""},
		{"max 100%", nil, ptr.To(str("100%")), 10, 0, ""},
		{"max -3", nil, ptr.To(num(-3)), 10, 0, "maxUnhealthy must not be negative: -3"},
		{"max -30%", nil, ptr.To(str("-30%")), 10, 0, "maxUnhealthy must be a percentage from 0% to 100%"},
		{"both", ptr.To(num(1)), ptr.To(num(1)), 10, 0, "mutually exclusive"},
		{"neither", nil, nil, 10, 0, "set one of minHealthy or maxUnhealthy"},
		// Common cases.
		{"51% of 3", ptr.To(str("51%")), nil, 3, 2, ""},
		{"51% of 7", ptr.To(str("51%")), nil, 7, 4, ""},
		{"51% of 9", ptr.To(str("51%")), nil, 9, 5, ""},
		{"51% of 0", ptr.To(str("51%")), nil, 0, 0, ""},
		// Where we differ from upstream.
		{"a string of digits is a number (upstream: error on every reconcile)", ptr.To(str("3")), nil, 10, 3, ""},
		{"max above the node count means no limit (upstream: error)", nil, ptr.To(num(12)), 10, 0, ""},
		{"max 1 with no nodes (upstream: error that blocks the first unhealthy node)", nil, ptr.To(num(1)), 0, 0, ""},
		{"a string that is no number", ptr.To(str("half")), nil, 10, 0, "minHealthy must be an integer of 0 or more, or a percentage"},
		{"a percentage above 100", ptr.To(str("120%")), nil, 10, 0, "minHealthy must be a percentage from 0% to 100%"},
		{"min above the node count never allows", ptr.To(num(12)), nil, 10, 12, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := minHealthyOf(&v1alpha1.NodeHealthCheckSpec{MinHealthy: tc.min, MaxUnhealthy: tc.max}, tc.observed)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestNewRemediationsNeedTheBudget(t *testing.T) {
	cases := []struct {
		name        string
		option      nhcOption
		healthy     int
		unhealthy   int
		wantCreated int
		wantAllowed bool
	}{
		{"51% of 3 with 2 healthy", minHealthy(intstr.FromString("51%")), 2, 1, 1, true},
		{"51% of 7 with 3 healthy", minHealthy(intstr.FromString("51%")), 3, 4, 0, false},
		{"exactly minHealthy healthy: every unhealthy node gets one", minHealthy(intstr.FromInt32(4)), 4, 3, 3, true},
		{"one below minHealthy: none", minHealthy(intstr.FromInt32(5)), 4, 3, 0, false},
		{"maxUnhealthy 2 with 2 unhealthy", maxUnhealthy(intstr.FromInt32(2)), 8, 2, 2, true},
		{"maxUnhealthy 2 with 3 unhealthy", maxUnhealthy(intstr.FromInt32(2)), 7, 3, 0, false},
		{"maxUnhealthy above the node count", maxUnhealthy(intstr.FromInt32(50)), 1, 9, 9, true},
		{"minHealthy as a string of digits", minHealthy(intstr.FromString("2")), 2, 1, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list := append(nodes("healthy", tc.healthy), nodes("unhealthy", tc.unhealthy, unhealthy)...)
			d := evaluate(testNHC(tc.option), list, nil)
			assert.Len(t, d.Create, tc.wantCreated)
			assert.Equal(t, tc.wantAllowed, d.Budget.Allowed)
			assert.Equal(t, tc.healthy, d.Healthy)
			assert.Equal(t, tc.healthy+tc.unhealthy, d.Observed)
			assert.Len(t, d.Status.UnhealthyNodes, tc.unhealthy, "every unhealthy node is listed, waiting or not")
			if !tc.wantAllowed {
				assert.Equal(t, WaitMinHealthy, verdictOf(d, "unhealthy-0").Waiting)
				assert.Contains(t, d.Status.Reason, "because only")
			}
		})
	}
}

func TestSoonUnhealthyNodesDoNotCountAsHealthy(t *testing.T) {
	// 2 healthy + 1 soon unhealthy + 1 unhealthy: 51% of 4 is 3, only 2 are healthy.
	list := append(nodes("healthy", 2), testNode("soon", notReady(time.Minute)), testNode("sick", unhealthy))
	d := evaluate(testNHC(), list, nil)
	assert.Equal(t, 2, d.Healthy)
	assert.Empty(t, d.Create)
	assert.Equal(t, now.Add(4*time.Minute), d.NextDeadline)
}

func TestEscalationWaitsForTheBudgetAndStormRecovery(t *testing.T) {
	// The spec: storm recovery blocks new remediations; the workflow: nothing
	// is processed further while minHealthy fails. A next step is a new
	// remediation, so both hold it; the running step keeps running.
	a, b := template("ATemplate", "a"), template("BTemplate", "b")
	steps := escalating(escalationStep(a, 1, 5*time.Minute), escalationStep(b, 2, 5*time.Minute))
	list := append(nodes("healthy", 2), nodes("unhealthy", 2, unhealthy)...)
	resources := remediations(remediationOf(a, "unhealthy-0", 6*time.Minute))
	cases := []struct {
		name string
		nhc  *v1alpha1.NodeHealthCheck
		wait WaitReason
	}{
		{"the budget is exhausted", testNHC(minHealthy(intstr.FromInt32(5)), steps), WaitMinHealthy},
		{"storm recovery is active", testNHC(minHealthy(intstr.FromInt32(0)), steps, stormThreshold(0), withStatus(v1alpha1.NodeHealthCheckStatus{
			StormRecoveryActive: ptr.To(true), StormRecoveryStartTime: ptr.To(metav1.NewTime(now.Add(-time.Minute))),
		})), WaitStorm},
		{"both gates open", testNHC(minHealthy(intstr.FromInt32(0)), steps), WaitNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluate(tc.nhc, list, resources)
			assert.Equal(t, tc.wait, verdictOf(d, "unhealthy-0").Waiting)
			if tc.wait != WaitNone {
				assert.Empty(t, d.TimeOut, "the running step keeps running, unannotated")
				assert.NotContains(t, createdNodes(d), "unhealthy-0", "no next step")
				assert.Nil(t, entryOf(d, "unhealthy-0").Remediations[0].TimedOut)
				return
			}
			assert.Len(t, d.TimeOut, 1)
			assert.Contains(t, createdNodes(d), "unhealthy-0")
		})
	}
}
