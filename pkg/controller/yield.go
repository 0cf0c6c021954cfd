package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// yieldAtMost bounds how long writes that can wait yield to creates: past
// it, a long storm's events and deletes go out beside its creates.
const yieldAtMost = 2 * time.Second

// Yield holds back the writes that can wait, events and the deletes of
// recovered nodes' remediations, while remediation creates are in flight:
// on a busy API server every request sent beside a storm's creates delays
// them. Nothing waits longer than yieldAtMost after creates began.
type Yield struct {
	clock clock.Clock
	mu    sync.Mutex
	// syncs counts the syncs whose creates are in flight; idle is closed
	// while none is, and busySince is when the first began.
	syncs     int
	idle      chan struct{}
	busySince time.Time
}

// NewYield returns a Yield with no create in flight.
func NewYield(clock clock.Clock) *Yield {
	idle := make(chan struct{})
	close(idle)
	return &Yield{clock: clock, idle: idle}
}

// creating marks a sync's creates in flight until the returned func is
// called.
func (y *Yield) creating() (done func()) {
	if y == nil {
		return func() {}
	}
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.syncs == 0 {
		y.idle, y.busySince = make(chan struct{}), y.clock.Now()
	}
	y.syncs++
	return func() {
		y.mu.Lock()
		defer y.mu.Unlock()
		if y.syncs--; y.syncs == 0 {
			close(y.idle)
		}
	}
}

// wait waits until no create is in flight, at most until yieldAtMost after
// creates began, or ctx ends.
func (y *Yield) wait(ctx context.Context) {
	if y == nil {
		return
	}
	y.mu.Lock()
	idle, left := y.idle, yieldAtMost-y.clock.Since(y.busySince)
	busy := y.syncs > 0
	y.mu.Unlock()
	if !busy || left <= 0 {
		return
	}
	timer := y.clock.NewTimer(left)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C():
	case <-ctx.Done():
	}
}

// EventSink is sink, its writes yielding to creates. The broadcaster
// queues the events meanwhile (up to 1,000) and sends them in order.
func (y *Yield) EventSink(sink record.EventSink) record.EventSink {
	return yieldingSink{sink: sink, yield: y}
}

type yieldingSink struct {
	sink  record.EventSink
	yield *Yield
}

func (s yieldingSink) Create(event *corev1.Event) (*corev1.Event, error) {
	s.yield.wait(context.Background())
	return s.sink.Create(event)
}

func (s yieldingSink) Update(event *corev1.Event) (*corev1.Event, error) {
	s.yield.wait(context.Background())
	return s.sink.Update(event)
}

func (s yieldingSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	s.yield.wait(context.Background())
	return s.sink.Patch(event, data)
}
