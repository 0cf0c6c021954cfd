// Package e2e proves the controller end to end: the nhc-controller binary
// runs as a separate process against a real kube-apiserver and etcd, and the
// tests change nodes and assert what an operator sees through the API.
package e2e

import (
	"os"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env        *framework.Env
	controller *framework.Controller
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithController(m, "e2e", []string{"--leader-elect=false"}, func(e *framework.Env, c *framework.Controller) {
		env, controller = e, c
	}))
}
