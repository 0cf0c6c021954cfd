package remediation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	e := NewExpectations(clock)
	assert.True(t, e.Satisfied("workers"), "nothing expected after a start")

	r, err := NewRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	r.SetUID("r-uid")

	e.ExpectCreation("workers", testGVR, "remediators", "worker-1", "reboot")
	assert.False(t, e.Satisfied("workers"))
	assert.True(t, e.Satisfied("others"), "per NodeHealthCheck")
	e.Settle(testGVR, r, false)
	assert.True(t, e.Satisfied("workers"), "the informer shows the created resource")

	e.ExpectDeletion("workers", "r-uid")
	e.Settle(testGVR, r, false)
	assert.False(t, e.Satisfied("workers"), "still there")
	deleting := r.DeepCopy()
	deleting.SetDeletionTimestamp(&metav1.Time{Time: clock.Now()})
	e.Settle(testGVR, deleting, false)
	assert.True(t, e.Satisfied("workers"), "a deletion timestamp is the delete observed")

	e.ExpectCreation("workers", testGVR, "remediators", "worker-2", "reboot")
	e.ForgetCreation("workers", testGVR, "remediators", "worker-2", "reboot")
	assert.True(t, e.Satisfied("workers"))

	e.ExpectCreation("workers", testGVR, "remediators", "worker-3", "reboot")
	clock.SetTime(clock.Now().Add(ExpectationsTTL - time.Nanosecond))
	assert.False(t, e.Satisfied("workers"))
	clock.SetTime(clock.Now().Add(time.Nanosecond))
	assert.True(t, e.Satisfied("workers"), "an event that never came lapses")
}
