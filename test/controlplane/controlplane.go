// Package controlplane starts a real kube-apiserver and etcd for the
// integration and end-to-end tests, with the project's CRDs installed.
//
// The binaries come from KUBEBUILDER_ASSETS when it is set, and otherwise from
// hack/build-k8s-binaries.sh, which builds them from source once into a cache.
package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// envtest logs through controller-runtime's logger. Left unset, its first
// use after 30 s prints a warning with a goroutine's stack, which reads like
// a failure in a test's output; what envtest would log (the CRDs it
// installs) the tests state themselves.
func init() { ctrllog.SetLogger(logr.Discard()) }

// ControlPlane is a running kube-apiserver with etcd.
type ControlPlane struct {
	// Config authenticates as a cluster admin.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for Config, for kubectl and
	// for the controller binary.
	Kubeconfig string
	// BinDir holds kube-apiserver, etcd and kubectl.
	BinDir string

	env     *envtest.Environment
	tempDir string
}

// RepoRoot returns the root of this repository.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir returns the directory with kube-apiserver, etcd and kubectl, building
// them first when needed.
func BinDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	return lastLineOf("build-k8s-binaries.sh")
}

// lastLineOf runs a script of hack/ and returns the last line it printed:
// what it built.
func lastLineOf(name string) (string, error) {
	script := filepath.Join(RepoRoot(), "hack", name)
	var stdout bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return lines[len(lines)-1], nil
}

// Start starts etcd and kube-apiserver and installs the CRDs found in the
// given directories, relative to the repository root.
func Start(crdDirs ...string) (*ControlPlane, error) {
	return StartWithFlags(nil, crdDirs...)
}

// StartWithFlags is Start with extra kube-apiserver flags, such as an audit
// log for the scale benchmark.
func StartWithFlags(apiServerFlags map[string]string, crdDirs ...string) (*ControlPlane, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(crdDirs))
	for _, dir := range crdDirs {
		paths = append(paths, filepath.Join(RepoRoot(), dir))
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: true,
	}
	for name, value := range apiServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", binDir, err)
	}
	cp := &ControlPlane{Config: cfg, BinDir: binDir, env: env}
	if cp.tempDir, err = os.MkdirTemp("", "nhc-controlplane-"); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(cp.tempDir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

// InstallCRDs installs the CRDs in a directory, relative to the repository
// root, and waits until they are served.
func (cp *ControlPlane) InstallCRDs(dir string) error {
	_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(RepoRoot(), dir)},
		ErrorIfPathMissing: true,
	})
	return err
}

// UserKubeconfig writes a kubeconfig for a user with only the rights RBAC
// grants it, and returns its path. A user named
// system:serviceaccount:<namespace>:<name> acts as that ServiceAccount.
func (cp *ControlPlane) UserKubeconfig(name string, groups ...string) (string, error) {
	user, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, cp.Config)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.tempDir, strings.NewReplacer(":", "_", "/", "_").Replace(name)+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}

// Kubectl runs kubectl against this control plane and returns its standard
// output; a failure returns the standard error in the error.
func (cp *ControlPlane) Kubectl(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(cp.BinDir, "kubectl"), append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Stop stops kube-apiserver and etcd and removes the temporary files.
func (cp *ControlPlane) Stop() error {
	err := cp.env.Stop()
	if cp.tempDir != "" {
		_ = os.RemoveAll(cp.tempDir)
	}
	return err
}

// Helm returns the pinned helm binary, building it first when needed
// (hack/build-helm.sh), unless $HELM names one.
func Helm() (string, error) { return helmBinary() }

// helmBinary finds or builds Helm once per test process.
var helmBinary = sync.OnceValues(func() (string, error) {
	if helm := os.Getenv("HELM"); helm != "" {
		return helm, nil
	}
	return lastLineOf("build-helm.sh")
})

// Helm runs the pinned Helm against this control plane and returns its
// standard output; a failure returns the standard error in the error.
func (cp *ControlPlane) Helm(args ...string) (string, error) {
	helm, err := Helm()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
