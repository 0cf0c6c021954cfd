package check

import "github.com/nodehealthcheck/nhc-controller/test/sim/cluster"

// NodeDenied hears that a kind's remediator's webhook refuses a node's
// resources (on), or admits them again. While it refuses, that node's own
// remediation and escalation are not due: the controller skips it with an
// event and tries again later, and the other nodes must not wait for it.
func (c *Checker) NodeDenied(k cluster.Kind, node string, on bool) {
	if c.denied[node] == nil {
		c.denied[node] = map[cluster.Kind]bool{}
	}
	c.denied[node][k] = on
}

// refused tells whether a remediator's webhook refuses a node's resources
// of any kind now.
func (c *Checker) refused(node string) bool {
	for _, on := range c.denied[node] {
		if on {
			return true
		}
	}
	return false
}
