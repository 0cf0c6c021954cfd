package ha

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"time"
)

// unfinishedPerPort connections hold an unfinished request on each port:
// a header line of unfinishedBytes on the probe port, a TLS ClientHello
// that announces helloAnnounced bytes and sends unfinishedBytes on the
// metrics port.
const (
	unfinishedPerPort = 2500
	unfinishedBytes   = 60000
	helloAnnounced    = 65000
)

// holdUnfinishedRequests starts the connections that hold unfinished
// requests on c's ports, each opened again as soon as the server closes
// it, until attack ends.
func holdUnfinishedRequests(attack context.Context, attackers *sync.WaitGroup, probeAddress, metricsAddress string) {
	header := []byte("GET /healthz HTTP/1.1\r\nHost: attack\r\nX-Fill: " + strings.Repeat("a", unfinishedBytes))
	hello := unfinishedClientHello(helloAnnounced, unfinishedBytes)
	for range unfinishedPerPort {
		attackers.Go(func() { holdUnfinished(attack, probeAddress, header) })
		attackers.Go(func() { holdUnfinished(attack, metricsAddress, hello) })
	}
}

// holdUnfinished sends start (if any) on a connection and waits, opening
// it again as soon as the server closes it, until ctx ends.
func holdUnfinished(ctx context.Context, addr string, start []byte) {
	var dialer net.Dialer
	for ctx.Err() == nil {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		if _, err := conn.Write(start); len(start) == 0 || err == nil {
			_, _ = conn.Read(make([]byte, 1))
		}
		stop()
		_ = conn.Close()
	}
}

// unfinishedClientHello is the start of a TLS handshake, in records of at
// most 16 KiB, that announces a ClientHello of announced bytes and carries
// sent of them.
func unfinishedClientHello(announced, sent int) []byte {
	body := make([]byte, 4+sent)
	body[0] = 1 // ClientHello
	body[1], body[2], body[3] = byte(announced>>16), byte(announced>>8), byte(announced)
	var records []byte
	for len(body) > 0 {
		size := min(len(body), 16<<10)
		header := []byte{22, 3, 1, 0, 0} // handshake, TLS 1.0 record version
		binary.BigEndian.PutUint16(header[3:], uint16(size))
		records = append(records, header...)
		records = append(records, body[:size]...)
		body = body[size:]
	}
	return records
}
