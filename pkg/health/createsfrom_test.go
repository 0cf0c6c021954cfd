package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Plan.CreatesFrom is when a create may first be due: the node cache reads
// updates at once from then on, and in batches before.
func TestThePlanSaysFromWhenACreateMayBeDue(t *testing.T) {
	s := newSimulation(testNHC(threeSteps()), 3)
	assert.True(t, s.evaluate().CreatesFrom.IsZero(), "every node healthy")

	// Ready=False for 1 of its 5 minutes.
	s.setReady("node-00", corev1.ConditionFalse, time.Minute)
	d := s.evaluate()
	require.Empty(t, d.Create)
	assert.Equal(t, s.clock.Add(4*time.Minute), d.CreatesFrom, "the condition's duration")

	s.advance(4 * time.Minute)
	d = s.evaluate()
	require.Len(t, d.Create, 1)
	assert.Equal(t, s.clock, d.CreatesFrom, "due now")

	s.advance(time.Minute)
	d = s.evaluate()
	require.Empty(t, d.Create)
	assert.Equal(t, s.clock.Add(4*time.Minute), d.CreatesFrom, "the first step's 5 minute timeout")

	s.setReady("node-00", corev1.ConditionTrue, 0)
	assert.True(t, s.evaluate().CreatesFrom.IsZero(), "the node recovered")
}

// Once a plan's creates went out, the node cache batches node updates again
// until the next create may be due (Plan.CreatesFromAfter): the created
// step's timeout or another node's deadline. A node whose create did not go
// out, or that waits, keeps one due now.
func TestOnceTheCreatesWentOutTheNextIsDueLater(t *testing.T) {
	cases := []struct {
		name string
		nhc  *v1alpha1.NodeHealthCheck
		// failing fail for an hour; soon fails for a minute of its five.
		failing []string
		soon    string
		// lost drops the outcome's creates: they did not go out.
		lost bool
		// controlPlane makes every node a control-plane node.
		controlPlane bool
		// after is how long after now the next create may be due; -1 never.
		after time.Duration
	}{
		{name: "nothing more", nhc: testNHC(), failing: []string{"node-00"}, after: -1},
		{name: "the created step's timeout", nhc: testNHC(threeSteps()), failing: []string{"node-00"}, after: 5 * time.Minute},
		{name: "another node's deadline", nhc: testNHC(), failing: []string{"node-00"}, soon: "node-01", after: 4 * time.Minute},
		{name: "a create that did not go out", nhc: testNHC(), failing: []string{"node-00"}, lost: true, after: 0},
		{name: "a control-plane node held back by another", nhc: testNHC(), failing: []string{"node-00", "node-01"}, controlPlane: true, after: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimulation(tc.nhc, 5)
			if tc.controlPlane {
				for i, n := range s.nodes {
					s.nodes[i] = n.DeepCopy()
					controlPlane(s.nodes[i])
				}
			}
			s.fail(tc.failing...)
			if tc.soon != "" {
				s.setReady(tc.soon, corev1.ConditionFalse, time.Minute)
			}
			d := s.evaluate()
			require.NotEmpty(t, d.out.Created)
			require.Equal(t, s.clock, d.CreatesFrom, "due now, before the acts")
			if tc.lost {
				d.out.Created = nil
			}
			after := d.CreatesFromAfter(&d.out)
			if tc.after < 0 {
				assert.True(t, after.IsZero(), "none may be due until an object changes: %v", after)
				return
			}
			assert.Equal(t, s.clock.Add(tc.after), after)
		})
	}
}
