// Package ha proves that crashes and leader changes never duplicate or lose
// a remediation. It starts its own controller processes, so it has its own
// control plane.
package ha

import (
	"fmt"
	"os"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	var err error
	env, err = framework.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}
