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
		raw, err := conn.(*net.TCPConn).SyscallConn()
		require.NoError(t, err)
		options := map[int]int{}
		require.NoError(t, raw.Control(func(fd uintptr) {
			for _, option := range []int{syscall.SO_KEEPALIVE} {
				options[option], _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, option)
			}
			for _, option := range []int{syscall.TCP_KEEPIDLE, syscall.TCP_KEEPINTVL, syscall.TCP_KEEPCNT} {
				options[option], _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, option)
			}
		}))
		assert.Equal(t, 1, options[syscall.SO_KEEPALIVE], name)
		idle, interval, count := options[syscall.TCP_KEEPIDLE], options[syscall.TCP_KEEPINTVL], options[syscall.TCP_KEEPCNT]
		assert.Equal(t, DeadConnectionBound, time.Duration(idle+interval*count)*time.Second, "%s: idle %ds, %d probes %ds apart", name, idle, count, interval)
		require.NoError(t, conn.Close())
	}
}
