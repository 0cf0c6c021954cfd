package nodecache

import (
	"net"
	"time"
)

// The node client speaks HTTP/1.1, without HTTP/2's pings, so a watch
// whose peer is gone without a word (the API server's host lost, a NAT or a
// load balancer that dropped the flow: a half-open connection) is noticed
// only by TCP keepalive. Go's default (15 s idle, 15 s apart, the kernel's 9
// probes) noticed it after 150 s or more, while the cache showed every node
// as it was; these probes notice it within DeadConnectionBound, and the
// informer watches again. Every create of a remediation resource is
// confirmed at the API server anyway (the controller's confirmation), so a node seen
// late is never remediated after it recovered.
var nodeKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 3}

// DeadConnectionBound is the longest a node connection whose peer is gone
// goes unnoticed: the idle time before the first probe and the probes.
const DeadConnectionBound = 20 * time.Second

// nodeDialer dials the node client's connections, with client-go's connect
// timeout and nodeKeepAlive.
func nodeDialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAliveConfig: nodeKeepAlive}
}
