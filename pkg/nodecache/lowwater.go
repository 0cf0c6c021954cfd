package nodecache

import "net"

// While a paced reader waits out its window, the socket must not wake the
// process for every update that arrives: Go's netpoller is edge-triggered,
// so each TCP segment of each heartbeat would wake a thread that finds no
// reader waiting: 120 wake-ups a second at 83 heartbeats a second, the
// scheduler's search for work then being 40% of a quiet cluster's CPU. The
// socket's receive low-water mark (SO_RCVLOWAT) keeps the kernel from
// reporting it readable until that much has arrived: raised while the
// reader waits, and set back to one byte before it reads, so that a read
// which finds the socket empty waits for the next byte, as any read does.

// mutedLowWater is the low-water mark while the reader waits: as high as
// can be asked, which Linux caps at half the most a TCP socket may hold
// (net.ipv4.tcp_rmem), the receive buffer autotuning could grow to anyway.
const mutedLowWater = 1<<31 - 1

// lowWaterSetter sets a socket's receive low-water mark.
type lowWaterSetter func(bytes int) error

// muteArrivals keeps updates arriving during the window from waking the
// process. It is best effort: if the mark cannot be raised, they wake it,
// as they did before.
func (c *pacedConn) muteArrivals() {
	if c.lowWater != nil {
		_ = c.lowWater(mutedLowWater)
	}
}

// unmuteArrivals sets the mark back to one byte before the reader reads.
// A connection whose mark cannot be set back is not read any more: a read
// could wait for far more than the next update.
func (c *pacedConn) unmuteArrivals() error {
	if c.lowWater == nil {
		return nil
	}
	return c.lowWater(1)
}

// tcpLowWater returns the setter of a TCP connection's low-water mark, or
// nil for any other connection or system.
func tcpLowWater(conn net.Conn) lowWaterSetter {
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	return socketLowWater(raw)
}
