package nodecache

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
)

// On a real socket: the kernel holds the raised mark while the window is
// waited, and a read after it returns the next byte that arrives, however
// little comes.
func TestAWaitedWindowMutesTheSocketAndTheNextByteIsRead(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	pacing := &readPacing{window: 50 * time.Millisecond, clock: clock.RealClock{}}
	conn, err := pacing.dialer()(context.Background(), "tcp", listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	paced := conn.(*pacedConn)
	paced.watch.Store(true)
	peer, err := listener.Accept()
	require.NoError(t, err)
	defer peer.Close()

	_, err = peer.Write([]byte("first"))
	require.NoError(t, err)
	n, err := paced.Read(make([]byte, 16))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Greater(t, receiveLowWater(t, paced), 1<<16, "muted while the window is waited")

	go func() {
		time.Sleep(100 * time.Millisecond)
		_, _ = peer.Write([]byte("x"))
	}()
	buffer := make([]byte, 16)
	n, err = paced.Read(buffer)
	require.NoError(t, err)
	assert.Equal(t, "x", string(buffer[:n]), "a read after the window waits for one byte")
	assert.Greater(t, receiveLowWater(t, paced), 1<<16, "and the socket, emptied, is muted again")
}

// receiveLowWater is the receive low-water mark of a paced connection's
// socket.
func receiveLowWater(t *testing.T, conn *pacedConn) int {
	return socketOption(t, conn.Conn.(*net.TCPConn), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
}
