// Package leases proves node leases end to end against a real API server:
// the nhc-controller binary shares each node's Lease with another operator,
// such as node-maintenance-operator, and never acts on a node it holds. The
// controller runs with short lease durations (3s + 1s), as upstream's tests
// do, so that renewal and overdue leases happen within a test.
package leases

import (
	"fmt"
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = framework.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	controller, err = env.StartController("leases", leaseFlags...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := controller.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the controller:", err)
		code = 1
	}
	if code != 0 {
		controller.DumpLog(os.Stderr)
	}
	return code
}
