package nodecache

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

// The socket is muted from the read that empties it to the next read from
// it, and only then: arrivals meanwhile do not wake the process, and a
// read that finds the socket empty waits for one byte.
func TestArrivalsAreMutedOnlyWhileTheWindowIsWaited(t *testing.T) {
	const window, buffer = 100 * time.Millisecond, pacedReadSize
	tests := []struct {
		name   string
		watch  bool
		counts []int
		// marks are the low-water marks set during each read.
		marks [][]int
	}{
		{name: "a short read mutes until the next read", watch: true,
			counts: []int{5, 7}, marks: [][]int{{mutedLowWater}, {1, mutedLowWater}}},
		{name: "a full read leaves the socket as it is", watch: true,
			counts: []int{buffer, 2, buffer}, marks: [][]int{nil, {mutedLowWater}, {1}}},
		{name: "a list is never muted", watch: false,
			counts: []int{5, 7}, marks: [][]int{nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set []int
			conn := &pacedConn{
				Conn:     &scriptedConn{counts: tt.counts},
				pacing:   &readPacing{window: window, clock: clocktesting.NewFakeClock(time.Unix(0, 0))},
				lowWater: func(bytes int) error { set = append(set, bytes); return nil },
			}
			conn.watch.Store(tt.watch)
			var marks [][]int
			for range tt.counts {
				set = nil
				_, _ = conn.Read(make([]byte, buffer))
				marks = append(marks, set)
			}
			assert.Equal(t, tt.marks, marks)
		})
	}
}

// A connection whose mark cannot be set back is not read: its read could
// wait for far more than the next update. One whose mark cannot be raised
// is read as before.
func TestAMarkThatCannotBeSetBackEndsTheConnection(t *testing.T) {
	broken := errors.New("bad file descriptor")
	socket := &scriptedConn{counts: []int{5, 7}}
	conn := &pacedConn{
		Conn:     socket,
		pacing:   &readPacing{window: time.Millisecond, clock: clocktesting.NewFakeClock(time.Unix(0, 0))},
		lowWater: func(int) error { return broken },
	}
	conn.watch.Store(true)
	n, err := conn.Read(make([]byte, 8))
	assert.Equal(t, 5, n)
	assert.NoError(t, err, "the mark could not be raised: read as before")
	_, err = conn.Read(make([]byte, 8))
	assert.ErrorIs(t, err, broken)
	assert.Equal(t, 1, socket.reads, "the socket is not read with its mark raised")
}
