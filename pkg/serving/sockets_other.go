//go:build !unix

package serving

// setReceiveBuffer leaves the kernel's receive buffer where the platform
// has no SO_RCVBUF of this shape; the controller ships for Linux.
func setReceiveBuffer(uintptr, int) error { return nil }
