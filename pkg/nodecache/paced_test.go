package nodecache

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

// scriptedConn answers each read with the next count of bytes, or io.EOF
// for a negative count.
type scriptedConn struct {
	net.Conn
	counts []int
}

func (c *scriptedConn) Read(b []byte) (int, error) {
	n := c.counts[0]
	c.counts = c.counts[1:]
	if n < 0 {
		return 0, io.EOF
	}
	return n, nil
}

func TestPacedConnWaitsOnlyAfterEmptyingTheSocket(t *testing.T) {
	const window, buffer = 100 * time.Millisecond, 16
	tests := []struct {
		name   string
		active bool
		// counts are the bytes each read returns out of buffer.
		counts []int
		// waits are how long each read waited before reading.
		waits []time.Duration
	}{
		{name: "a short read makes the next one wait", active: true,
			counts: []int{5, 7, 3}, waits: []time.Duration{0, window, window}},
		{name: "a full read leaves more to read at once", active: true,
			counts: []int{buffer, buffer, 2, buffer}, waits: []time.Duration{0, 0, 0, window}},
		{name: "an ended connection does not wait", active: true,
			counts: []int{-1, 4}, waits: []time.Duration{0, 0}},
		{name: "before the cache syncs, nothing waits", active: false,
			counts: []int{5, 7, 3}, waits: []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Unix(0, 0))
			pacing := &readPacing{window: window, synced: func() bool { return tt.active }, clock: clock}
			conn := &pacedConn{Conn: &scriptedConn{counts: tt.counts}, pacing: pacing}
			var waits []time.Duration
			for range tt.counts {
				before := clock.Now()
				_, _ = conn.Read(make([]byte, buffer))
				waits = append(waits, clock.Since(before))
			}
			assert.Equal(t, tt.waits, waits)
		})
	}
}

func TestPacedConnWaitsOnlyWhatIsLeftOfTheWindow(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(0, 0))
	pacing := &readPacing{window: 100 * time.Millisecond, synced: func() bool { return true }, clock: clock}
	conn := &pacedConn{Conn: &scriptedConn{counts: []int{1, 1}}, pacing: pacing}
	_, _ = conn.Read(make([]byte, 8))
	// Handling what was read took 30ms.
	clock.Step(30 * time.Millisecond)
	before := clock.Now()
	_, _ = conn.Read(make([]byte, 8))
	assert.Equal(t, 70*time.Millisecond, clock.Since(before))
}

func TestPacingStandsDownWhileUpdatesAreUrgent(t *testing.T) {
	urgent := false
	pacing := &readPacing{window: time.Second, synced: func() bool { return true }, clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	assert.True(t, pacing.active(), "synced, no one asks for more")
	i := &Informer{pacing: pacing}
	i.ReadAtOnceWhile(func() bool { return urgent })
	assert.True(t, pacing.active(), "synced, nothing urgent")
	urgent = true
	assert.False(t, pacing.active(), "a decision is due")
	pacing.synced = func() bool { return false }
	urgent = false
	assert.False(t, pacing.active(), "not synced")
}
