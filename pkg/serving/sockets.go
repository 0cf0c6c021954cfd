package serving

import (
	"context"
	"net"
	"syscall"
)

// receiveBuffer is the receive buffer the ports' sockets ask the kernel
// for; Linux doubles it for its bookkeeping, so a socket holds at most
// about 4 KiB its peer sent and the process has not read. Without it the
// kernel grows each buffer with what the peer sends, to 128 KiB: memory
// charged to the pod that no budget of the process counts, kept on every
// connection that is parked or waits in the accept queue. Accepted sockets
// inherit it from the listener. The least buffer the kernel grants (about
// 1 KiB of data) made kubelet probes time out under attack.
const receiveBuffer = 4 << 10

// listen listens on address with receiveBuffer.
func listen(address string) (net.Listener, error) {
	config := net.ListenConfig{Control: func(_, _ string, conn syscall.RawConn) error {
		var err error
		if controlErr := conn.Control(func(fd uintptr) { err = setReceiveBuffer(fd, receiveBuffer) }); controlErr != nil {
			return controlErr
		}
		return err
	}}
	return config.Listen(context.Background(), "tcp", address)
}
