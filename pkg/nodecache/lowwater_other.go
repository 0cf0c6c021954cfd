//go:build !linux

package nodecache

import "syscall"

// socketLowWater is nil off Linux: there, the arrivals of a window wake
// the process as they come.
func socketLowWater(syscall.RawConn) lowWaterSetter { return nil }
