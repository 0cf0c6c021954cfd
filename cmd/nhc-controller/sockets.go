package main

import (
	"context"
	"net"
	"syscall"
)

// receiveBuffer is the receive buffer the ports' sockets ask the kernel
// for: the least it grants (Linux: 2,304 bytes with its bookkeeping, about
// 1 KiB of data). Without it the kernel grows each buffer with what the
// peer sends, tens of KiB a socket: memory charged to the pod that no
// budget of the process counts, kept on every connection that is parked
// or waits in the accept queue. Accepted sockets inherit it from the
// listener. What the ports serve is a few hundred bytes a request (a
// probe, a scrape, a TLS ClientHello), read as it comes; a larger one
// takes a few more round trips.
const receiveBuffer = 1

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
