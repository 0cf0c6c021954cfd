package nodecache

import "syscall"

func socketLowWater(raw syscall.RawConn) lowWaterSetter {
	return func(bytes int) error {
		var err error
		if controlErr := raw.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, bytes)
		}); controlErr != nil {
			return controlErr
		}
		return err
	}
}
