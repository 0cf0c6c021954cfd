package nodecache

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// The node client's connections probe a silent peer so that a half-open
// watch ends within DeadConnectionBound: the kernel is asked for it.
func TestNodeConnectionsNoticeADeadPeer(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	pacing := &readPacing{window: time.Millisecond, clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	for name, dial := range map[string]func(context.Context, string, string) (net.Conn, error){
		"lists": nodeDialer().DialContext, "the paced watch": pacing.dialer(),
	} {
		conn, err := dial(context.Background(), "tcp", listener.Addr().String())
		require.NoError(t, err, name)
		if paced, ok := conn.(*pacedConn); ok {
			conn = paced.Conn
		}
		tcp := conn.(*net.TCPConn)
		assert.Equal(t, 1, socketOption(t, tcp, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE), name)
		idle := socketOption(t, tcp, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		interval := socketOption(t, tcp, syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL)
		count := socketOption(t, tcp, syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
		assert.Equal(t, DeadConnectionBound, time.Duration(idle+interval*count)*time.Second, "%s: idle %ds, %d probes %ds apart", name, idle, count, interval)
		require.NoError(t, conn.Close())
	}
}

// socketOption reads one integer option of a TCP connection's socket.
func socketOption(t *testing.T, conn *net.TCPConn, level, option int) int {
	t.Helper()
	raw, err := conn.SyscallConn()
	require.NoError(t, err)
	var value int
	require.NoError(t, raw.Control(func(fd uintptr) {
		value, err = syscall.GetsockoptInt(int(fd), level, option)
	}))
	require.NoError(t, err)
	return value
}
