//go:build unix

package serving

import "syscall"

func setReceiveBuffer(fd uintptr, size int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, size)
}
