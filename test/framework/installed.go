package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// InstallNamespace is where the plain install and the chart's tests put the
// controller.
const InstallNamespace = "nhc-system"

// StartAsDeployed starts binary as the installed Deployment would run it
// (this control plane runs no pods): as its ServiceAccount, with its flags.
// Only the listen addresses are the test's, so that tests never collide on
// a port. The log is printed when the test fails.
func (e *Env) StartAsDeployed(t *testing.T, name, binary string) *Controller {
	t.Helper()
	deployment, err := e.Kube.AppsV1().Deployments(InstallNamespace).Get(t.Context(), "nhc-controller", metav1.GetOptions{})
	require.NoError(t, err)
	var flags []string
	for _, arg := range deployment.Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(arg, "--metrics-bind-address") && !strings.HasPrefix(arg, "--health-probe-bind-address") {
			flags = append(flags, arg)
		}
	}
	account := "system:serviceaccount:" + InstallNamespace + ":" + deployment.Spec.Template.Spec.ServiceAccountName
	kubeconfig, err := e.Cluster.UserKubeconfig(account, "system:serviceaccounts", "system:serviceaccounts:"+InstallNamespace, "system:authenticated")
	require.NoError(t, err)
	installed := *e
	installed.Binary = binary
	c, err := installed.StartControllerWithKubeconfig(name, kubeconfig, append(flags, "--leader-election-namespace="+InstallNamespace)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpLog(os.Stderr)
		}
	})
	return c
}

// BuildRelease checks out a release of this repository (a tag, or the
// commit it was cut from when the clone lacks tags) into a temporary folder
// and builds its controller there. It returns the folder (with the
// release's manifests) and the binary; it skips the test when the clone's
// history does not reach the release.
func BuildRelease(t *testing.T, tag, commit string) (dir, binary string) {
	t.Helper()
	root := controlplane.RepoRoot()
	var revision string
	for _, candidate := range []string{tag, commit} {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", candidate+"^{commit}").Output(); err == nil {
			revision = strings.TrimSpace(string(out))
			break
		}
	}
	if revision == "" {
		t.Skipf("this clone has neither tag %s nor commit %s (a shallow clone?): git fetch --tags, or clone in full", tag, commit)
	}
	dir = t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive --format=tar %s | tar -x -C %q", root, revision, dir))
	out, err := archive.CombinedOutput()
	require.NoError(t, err, "%s", out)
	binary = filepath.Join(dir, "nhc-controller-"+tag)
	build := exec.Command("go", "build", "-o", binary, "./cmd/nhc-controller")
	build.Dir = dir
	out, err = build.CombinedOutput()
	require.NoError(t, err, "building %s: %s", tag, out)
	return dir, binary
}
