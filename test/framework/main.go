package framework

import (
	"fmt"
	"os"
	"testing"
)

// RunWithController is a test package's TestMain body: it starts a control
// plane and one controller process with the flags, hands both to started,
// runs the tests, and stops everything; the controller's log is printed when
// a test failed. It returns the exit code.
func RunWithController(m *testing.M, name string, flags []string, started func(*Env, *Controller)) int {
	env, err := StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	controller, err := env.StartController(name, flags...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	started(env, controller)
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

// Run is the TestMain body of a test package whose tests start their own
// controllers: it starts a control plane, runs the tests and stops it. It
// returns the exit code.
func Run(m *testing.M, started func(*Env)) int {
	env, err := StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	started(env)
	return m.Run()
}
