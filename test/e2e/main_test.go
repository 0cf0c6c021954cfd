// Package e2e proves the controller end to end: the nhc-controller binary
// runs as a separate process against a real kube-apiserver and etcd, and the
// tests change nodes and assert what an operator sees through the API.
package e2e

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
	controller, err = env.StartController("e2e", "--leader-elect=false")
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
