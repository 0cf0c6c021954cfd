// Package framework runs the nhc-controller binary against a real control
// plane for end-to-end tests, and offers helpers that act as a cluster would:
// nodes whose conditions change, remediator templates, NodeHealthChecks.
package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// RemediatorNamespace holds the test remediators' templates.
const RemediatorNamespace = "remediators"

// Env is a control plane with the CRDs installed and the controller built.
type Env struct {
	Cluster *controlplane.ControlPlane
	Kube    kubernetes.Interface
	NHC     versioned.Interface
	Dynamic dynamic.Interface
	// Binary is the built nhc-controller.
	Binary  string
	tempDir string
}

// StartEnv builds the controller, starts the control plane, and installs the
// NodeHealthCheck CRD and the test remediators' CRDs.
func StartEnv() (*Env, error) {
	return StartEnvWithFlags(nil)
}

// StartEnvWithFlags is StartEnv with extra kube-apiserver flags.
func StartEnvWithFlags(apiServerFlags map[string]string) (*Env, error) {
	tempDir, err := os.MkdirTemp("", "nhc-e2e-")
	if err != nil {
		return nil, err
	}
	env := &Env{tempDir: tempDir, Binary: filepath.Join(tempDir, "nhc-controller")}
	build := exec.Command("go", "build", "-o", env.Binary, "./cmd/nhc-controller")
	build.Dir = controlplane.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building nhc-controller: %w\n%s", err, out)
	}
	cluster, err := controlplane.StartWithFlags(apiServerFlags, "manifests/crd", "test/crds/remediators")
	if err != nil {
		return nil, err
	}
	return env, env.use(cluster)
}

// NewEnv returns the helpers for a running control plane that has the
// NodeHealthCheck and test remediator CRDs, without building the controller.
func NewEnv(cluster *controlplane.ControlPlane) (*Env, error) {
	env := &Env{}
	return env, env.use(cluster)
}

func (e *Env) use(cluster *controlplane.ControlPlane) error {
	e.Cluster = cluster
	e.Kube = kubernetes.NewForConfigOrDie(cluster.Config)
	e.NHC = versioned.NewForConfigOrDie(cluster.Config)
	e.Dynamic = dynamic.NewForConfigOrDie(cluster.Config)
	_, err := e.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RemediatorNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Stop stops the control plane and removes the temporary files.
func (e *Env) Stop() {
	if e.Cluster != nil {
		_ = e.Cluster.Stop()
	}
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

// Controller is a running nhc-controller process.
type Controller struct {
	Name string
	// MetricsAddress and ProbeAddress are where it serves.
	MetricsAddress, ProbeAddress string
	cmd                          *exec.Cmd
	logPath                      string
	done                         chan struct{}
	mu                           sync.Mutex
	exitErr                      error
}

// StartController starts the controller as cluster admin, with extra flags;
// its log (-v=4) goes to a file. Metrics are plain HTTP unless the flags say
// --metrics-secure=true.
func (e *Env) StartController(name string, flags ...string) (*Controller, error) {
	return e.StartControllerWithKubeconfig(name, e.Cluster.Kubeconfig, flags...)
}

// StartControllerWithKubeconfig starts the controller with the identity of a kubeconfig.
func (e *Env) StartControllerWithKubeconfig(name, kubeconfig string, flags ...string) (*Controller, error) {
	return e.startController(name, kubeconfig, nil, flags)
}

// StartControllerWithEnv starts the controller as cluster admin with
// variables added to its environment (GOMEMLIMIT, as the Deployment sets
// it), and extra flags.
func (e *Env) StartControllerWithEnv(name string, environ []string, flags ...string) (*Controller, error) {
	return e.startController(name, e.Cluster.Kubeconfig, environ, flags)
}

func (e *Env) startController(name, kubeconfig string, environ, flags []string) (*Controller, error) {
	c := &Controller{Name: name, MetricsAddress: freeAddress(), ProbeAddress: freeAddress(), done: make(chan struct{})}
	c.logPath = filepath.Join(e.tempDir, name+".log")
	log, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig", kubeconfig, "-v=4",
		"--metrics-bind-address", c.MetricsAddress, "--metrics-secure=false", "--health-probe-bind-address", c.ProbeAddress,
	}, flags...)
	c.cmd = exec.Command(e.Binary, args...)
	if environ != nil {
		c.cmd.Env = append(os.Environ(), environ...)
	}
	c.cmd.Stdout, c.cmd.Stderr = log, log
	if err := c.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, err
	}
	go func() {
		err := c.cmd.Wait()
		_ = log.Close()
		c.mu.Lock()
		c.exitErr = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// Stop sends SIGTERM and waits for a graceful exit.
func (c *Controller) Stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("controller %s did not stop within 60s of SIGTERM", c.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitErr
}

// Kill kills the controller with SIGKILL, as a crash would.
func (c *Controller) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// PID is the controller's process ID.
func (c *Controller) PID() int { return c.cmd.Process.Pid }

// Exited tells whether the process has ended.
func (c *Controller) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Log returns the controller's log so far.
func (c *Controller) Log() string {
	data, _ := os.ReadFile(c.logPath)
	return string(data)
}

// DumpLog writes the controller's log, for a failing test.
func (c *Controller) DumpLog(w io.Writer) {
	fmt.Fprintf(w, "---- log of controller %s ----\n", c.Name)
	_, _ = io.Copy(w, bytes.NewReader([]byte(c.Log())))
}

func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}
