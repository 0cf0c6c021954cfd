package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
