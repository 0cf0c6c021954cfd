// Package chart proves the Helm chart: its default render is the plain
// install's, object for object (labels aside), and `helm install` on a real
// API server brings up a controller that remediates, while `helm uninstall`
// (like `kubectl delete -k`) keeps the shared node lease namespace. It
// installs and uninstalls cluster-wide objects, so it has its own control
// plane.
package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env *framework.Env
	// helmBinary is the pinned Helm (hack/build-helm.sh).
	helmBinary string
	// chartDir is the chart in this repository.
	chartDir = filepath.Join(controlplane.RepoRoot(), "charts", "nhc-controller")
)

func TestMain(m *testing.M) {
	var err error
	if helmBinary, err = controlplane.Helm(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if env, err = framework.StartEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// helm runs the pinned Helm against the test control plane and returns its
// standard output; a failure returns the standard error in the error.
func helm(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBinary, append([]string{"--kubeconfig", env.Cluster.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
