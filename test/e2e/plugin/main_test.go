// Package plugin proves kubectl nhc end to end: the kubectl-nhc binary on
// the PATH of the real kubectl, against a real API server where the
// nhc-controller binary runs.
package plugin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env *framework.Env
	// pluginDir holds the kubectl-nhc binary; kubectl finds it on the PATH.
	pluginDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	pluginDir, err = os.MkdirTemp("", "kubectl-nhc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(pluginDir)
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "kubectl-nhc"), "./cmd/kubectl-nhc")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kubectl-nhc: %v\n%s", err, out)
		return 1
	}
	return framework.RunWithController(m, "plugin", []string{"--leader-elect=false"}, func(e *framework.Env, _ *framework.Controller) {
		env = e
	})
}
