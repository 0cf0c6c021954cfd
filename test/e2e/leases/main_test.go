// Package leases proves node leases end to end against a real API server:
// the nhc-controller binary shares each node's Lease with another operator,
// such as node-maintenance-operator, and never acts on a node it holds. The
// controller runs with short lease durations (3s + 1s), as upstream's tests
// do, so that renewal and overdue leases happen within a test.
package leases

import (
	"os"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env        *framework.Env
	controller *framework.Controller
)

// leaseFlags make a classic remediation's lease 3s + 1s: overdue 9s after it
// was taken.
var leaseFlags = []string{"--leader-elect=false", "--node-lease-duration=3s", "--node-lease-buffer=1s"}

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithController(m, "leases", leaseFlags, func(e *framework.Env, c *framework.Controller) {
		env, controller = e, c
	}))
}
