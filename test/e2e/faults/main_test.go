// Package faults runs the controller binary against a real API server while
// the way to it misbehaves: writes that fail for a while, creates whose
// response is lost, and the API server unreachable as during a restart.
// Afterwards there must be no duplicate resource, none for a recovered node,
// and a status that matches the cluster.
package faults

import (
	"fmt"
	"os"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env   *framework.Env
	proxy *framework.FaultProxy
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
	dir, err := os.MkdirTemp("", "nhc-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	proxy, err = framework.NewFaultProxy(env.Cluster.Config, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer proxy.Close()
	return m.Run()
}
