package serving

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A peer that sends and is never read fills a port's socket no further
// than the receive buffer the ports ask for: the kernel holds a few KiB of
// it, not the 128 KiB it grows a buffer to by default.
func TestAnUnreadSocketHoldsLittleOfWhatItsPeerSends(t *testing.T) {
	listener, err := listen("127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := listener.Accept()
		if err == nil {
			accepted <- conn
		}
	}()
	client, err := net.Dial("tcp", listener.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	server := <-accepted
	defer server.Close()

	go func() {
		_ = client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = client.Write(make([]byte, 1<<20))
	}()
	time.Sleep(500 * time.Millisecond)
	raw, err := server.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var queued, buffer int
	require.NoError(t, raw.Control(func(fd uintptr) {
		queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		buffer, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	}))
	t.Logf("receive buffer %d bytes, %d unread", buffer, queued)
	assert.LessOrEqual(t, buffer, 8<<10)
	assert.Positive(t, queued)
	assert.LessOrEqual(t, queued, 8<<10, "what the kernel keeps of the unread bytes")
}
