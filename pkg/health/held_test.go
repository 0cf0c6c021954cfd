package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A step whose resource its remediator (or a user) deleted while the node
// stayed unhealthy, held by a finalizer, still ends on its clock: the next
// step, another resource, comes once its timeout passes. A resource created
// before the node's unhealthy condition started belongs to an earlier
// incident, deleted when the node recovered: the node waits until it is
// gone, then starts again.
func TestAStepHeldByAFinalizerEndsOnItsClock(t *testing.T) {
	for _, tt := range []struct {
		name       string
		age        time.Duration
		sickFor    time.Duration
		wantCreate bool
		waiting    WaitReason
		deadline   time.Time
	}{
		{"its timeout passed", 6 * time.Minute, time.Hour, true, WaitNone, time.Time{}},
		{"its timeout to come", 2 * time.Minute, time.Hour, false, WaitNone, now.Add(3 * time.Minute)},
		{"from before the relapse", 20 * time.Minute, 10 * time.Minute, false, WaitDeletion, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			held := remediationOf(templateA, "sick", tt.age, deleting)
			nodes := append(nodes("healthy", 2), testNode("sick", notReady(tt.sickFor)))
			d := evaluate(testNHC(threeSteps()), nodes, remediations(held))
			assert.Equal(t, tt.waiting, verdictOf(d, "sick").Waiting)
			if !tt.wantCreate {
				assert.Empty(t, d.Create)
				if !tt.deadline.IsZero() {
					assert.Equal(t, tt.deadline, d.NextDeadline, "woken when it times out")
				}
				return
			}
			require.Len(t, d.Create, 1)
			assert.Equal(t, multiOne, d.Create[0].Template, "the next step")
			require.Len(t, d.TimeOut, 1)
			assert.Equal(t, held.Ref, d.TimeOut[0].Resource)
		})
	}
}
