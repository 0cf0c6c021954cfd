package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// recordingSink records the events it is asked to write.
type recordingSink struct{ written chan string }

func (s recordingSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.written <- "create " + e.Reason
	return e, nil
}

func (s recordingSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.written <- "update " + e.Reason
	return e, nil
}

func (s recordingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s.written <- "patch " + e.Reason
	return e, nil
}

// An event waits while creates are in flight and goes once they are done;
// past yieldAtMost it goes beside them; with none in flight it goes at
// once.
func TestEventsYieldToCreatesForABoundedTime(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0.Time)
	yield := NewYield(clock)
	sink := recordingSink{written: make(chan string, 1)}
	events := yield.EventSink(sink)
	send := func(reason string) { go func() { _, _ = events.Create(&corev1.Event{Reason: reason}) }() }
	written := func() string {
		select {
		case w := <-sink.written:
			return w
		case <-time.After(100 * time.Millisecond):
			return ""
		}
	}

	send("Idle")
	assert.Equal(t, "create Idle", written(), "no create in flight: at once")

	done := yield.creating()
	send("DuringCreates")
	assert.Empty(t, written(), "held while creates are in flight")
	done()
	assert.Equal(t, "create DuringCreates", written(), "sent once they are done")

	done = yield.creating()
	defer done()
	send("LongStorm")
	assert.Empty(t, written())
	clock.Step(yieldAtMost)
	assert.Equal(t, "create LongStorm", written(), "sent beside creates after yieldAtMost")
	send("StillStorming")
	assert.Equal(t, "create StillStorming", written(), "no wait once yieldAtMost passed")
}

// A nil Yield holds back nothing.
func TestANilYieldHoldsNothing(t *testing.T) {
	var yield *Yield
	yield.creating()()
	yield.wait(t.Context())
}
