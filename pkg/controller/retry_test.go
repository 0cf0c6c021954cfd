package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A NodeHealthCheck whose syncs keep failing is tried again at least every
// maxRetryDelay, however many failures came before: after a minute of
// conflicts, client-go's default back-off would put the next try minutes
// past the cause, and the status would go unrecorded that long.
// The first tries still come at once.
func TestFailingSyncsAreRetriedAtLeastEvery30s(t *testing.T) {
	limiter := retryLimiter()
	var delays []time.Duration
	for range 40 {
		delays = append(delays, limiter.When("nhc"))
	}
	assert.Equal(t, 5*time.Millisecond, delays[0])
	assert.Less(t, delays[5], time.Second)
	for _, d := range delays {
		assert.LessOrEqual(t, d, maxRetryDelay)
	}
	assert.Equal(t, maxRetryDelay, delays[39])
	limiter.Forget("nhc")
	assert.Equal(t, 5*time.Millisecond, limiter.When("nhc"), "a success starts over")
}
