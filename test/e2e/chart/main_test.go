// Package chart proves the Helm chart: its default render is the plain
// install's, object for object (labels aside), and `helm install` on a real
// API server brings up a controller that remediates, while `helm uninstall`
// (like `kubectl delete -k`) keeps the shared node lease namespace. It
// installs and uninstalls cluster-wide objects, so it has its own control
// plane.
package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	env *framework.Env
	// chartDir is the chart in this repository.
	chartDir = filepath.Join(controlplane.RepoRoot(), "charts", "nhc-controller")
)

func TestMain(m *testing.M) {
	os.Exit(framework.Run(m, func(e *framework.Env) { env = e }))
}
