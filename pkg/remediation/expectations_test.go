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
	assert.Empty(t, e.pendingNodes("workers"), "nothing expected after a start")

	r, err := newRemediation(testTemplate(nil), testNHC, "worker-1", false)
	require.NoError(t, err)
	r.SetUID("r-uid")

	e.expectCreation("workers", testGVR, "remediators", "worker-1", "reboot")
	assert.Equal(t, map[string]bool{"worker-1": true}, e.pendingNodes("workers"), "only the node written to waits")
	assert.Empty(t, e.pendingNodes("others"), "per NodeHealthCheck")
	assert.Equal(t, []string{"workers"}, e.settle(testGVR, r, false), "the create of workers confirmed")
	assert.Empty(t, e.pendingNodes("workers"), "the informer shows the created resource")
	assert.Empty(t, e.settle(testGVR, r, false), "confirmed once")

	e.expectDeletion("workers", "worker-1", "r-uid")
	assert.Empty(t, e.settle(testGVR, r, false), "a deletion is no create confirmed")
	assert.Equal(t, map[string]bool{"worker-1": true}, e.pendingNodes("workers"), "still there")
	deleting := r.DeepCopy()
	deleting.SetDeletionTimestamp(&metav1.Time{Time: clock.Now()})
	e.settle(testGVR, deleting, false)
	assert.Empty(t, e.pendingNodes("workers"), "a deletion timestamp is the delete observed")

	e.expectCreation("workers", testGVR, "remediators", "worker-2", "reboot")
	e.forgetCreation("workers", testGVR, "remediators", "worker-2", "reboot")
	assert.Empty(t, e.pendingNodes("workers"))

	e.expectCreation("workers", testGVR, "remediators", "worker-3", "reboot")
	clock.SetTime(clock.Now().Add(ExpectationsTTL - time.Nanosecond))
	assert.Equal(t, map[string]bool{"worker-3": true}, e.pendingNodes("workers"))
	clock.SetTime(clock.Now().Add(time.Nanosecond))
	assert.Empty(t, e.pendingNodes("workers"), "an event that never came lapses")
}
