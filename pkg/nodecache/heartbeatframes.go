package nodecache

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// maxFrame is the largest watch event read, as client-go's stream decoder
// bounds it: a larger one ends the watch.
const maxFrame = 16 << 20

// heartbeatFramer reads a protobuf watch's frames as
// protobuf.LengthDelimitedFramer does, but drops heartbeats while the
// reads are paced: of the heartbeats of one window, the watch passes the
// first on to the informer as a bookmark, and reads past the others. A
// heartbeat passed on costs more after its decoding than before it: the
// event crosses to the reflector's goroutine, then through the informer's
// queue to its handler's, to move a resourceVersion on. While the reads are
// paced, no create can be due within a window (readPacing), and nothing
// else reads that resourceVersion: it then lags the watch by a window or
// two at most. The cache's node is current at a dropped heartbeat all the
// same (heartbeats). Once a create may be due, every heartbeat is passed
// on, as the confirmation of a create waits for the cache to hold a
// revision.
type heartbeatFramer struct {
	events *watchEvents
	pacing *readPacing
}

func (f heartbeatFramer) NewFrameReader(body io.ReadCloser) io.ReadCloser {
	return &heartbeatFrames{body: body, events: f.events, pacing: f.pacing}
}

func (heartbeatFramer) NewFrameWriter(w io.Writer) io.Writer {
	return protobuf.LengthDelimitedFramer.NewFrameWriter(w)
}

// heartbeatFrames is one watch's frames (heartbeatFramer).
type heartbeatFrames struct {
	body   io.ReadCloser
	events *watchEvents
	pacing *readPacing
	// frame is the frame read last, and served how much of it Read has
	// handed out; decided is what was decided of it ahead, nil if nothing.
	frame   []byte
	served  int
	decided *decidedFrame
	// lastPassed is when the last heartbeat was passed on.
	lastPassed time.Time
}

// decidedFrame is a node update decoded ahead, at its object's offset in
// its frame.
type decidedFrame struct {
	offset    int
	node      *nodeview.Node
	heartbeat bool
}

// Read reads a frame into data, as the length-delimited frame reader does:
// a frame longer than data is handed out over several reads, each but the
// last with io.ErrShortBuffer.
func (f *heartbeatFrames) Read(data []byte) (int, error) {
	for f.served == len(f.frame) {
		if err := f.next(); err != nil {
			return 0, err
		}
		if f.dropped() {
			f.served = len(f.frame)
		}
	}
	if f.served == 0 && f.decided != nil && len(data) >= len(f.frame) {
		// The frame is handed out whole: the watch's decoder reads the
		// object at that offset of data next.
		raw := data[f.decided.offset:]
		f.events.objects.ahead.put(raw, f.decided.node, f.decided.heartbeat)
	}
	n := copy(data, f.frame[f.served:])
	f.served += n
	if f.served < len(f.frame) {
		return n, io.ErrShortBuffer
	}
	return n, nil
}

// next reads the next frame whole.
func (f *heartbeatFrames) next() error {
	var header [4]byte
	if _, err := io.ReadFull(f.body, header[:]); err != nil {
		return err
	}
	length := binary.BigEndian.Uint32(header[:])
	if length > maxFrame {
		return fmt.Errorf("a watch event of %d bytes, over %d", length, maxFrame)
	}
	if cap(f.frame) > 1<<20 {
		// One large node does not keep its buffer for the watch's life.
		f.frame = nil
	}
	if cap(f.frame) < int(length) {
		f.frame = make([]byte, length)
	}
	f.frame, f.served, f.decided = f.frame[:length], 0, nil
	_, err := io.ReadFull(f.body, f.frame)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// dropped decodes a node update of the frame ahead while the reads are
// paced, and tells whether it is a heartbeat to drop.
func (f *heartbeatFrames) dropped() bool {
	if f.pacing.window <= 0 || !f.pacing.active() {
		return false
	}
	typ, raw, err := splitEvent(f.frame)
	offset, inFrame := offsetIn(f.frame, raw)
	if err != nil || typ != string(watch.Modified) || !inFrame {
		return false
	}
	obj, _, err := f.events.objects.decodeFast(raw)
	node, ok := obj.(*nodeview.Node)
	if err != nil || !ok {
		return false
	}
	heartbeat := f.events.heartbeats.observe(watch.Modified, node)
	now := f.pacing.clock.Now()
	if heartbeat && now.Sub(f.lastPassed) < f.pacing.window {
		return true
	}
	if heartbeat {
		f.lastPassed = now
	}
	f.decided = &decidedFrame{offset: offset, node: node, heartbeat: heartbeat}
	return false
}

// offsetIn returns where inner, a slice of outer, starts in it.
func offsetIn(outer, inner []byte) (int, bool) {
	offset := cap(outer) - cap(inner)
	if len(inner) == 0 || offset < 0 || offset+len(inner) > len(outer) || &outer[offset] != &inner[0] {
		return 0, false
	}
	return offset, true
}

func (f *heartbeatFrames) Close() error { return f.body.Close() }
