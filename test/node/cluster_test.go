package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// The nodes of hack/node/cluster.sh: up starts the control-plane node, join
// the worker.
const (
	controlPlane = "nhc-control-plane"
	worker       = "nhc-worker"
)

// cluster is the running cluster of make node-up.
type cluster struct {
	env     *framework.Env
	kube    kubernetes.Interface
	kubectl string
	// release is the folder make release wrote, archive its image.
	release, archive string
	start            time.Time
}

// connect returns the cluster of make node-up, or skips: make test-node
// starts one and says where it is.
func connect(t *testing.T) *cluster {
	t.Helper()
	kubeconfig := os.Getenv("NHC_NODE_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("needs the cluster of make node-up and a release: run make test-node")
	}
	binDir := os.Getenv("K8S_BINARIES")
	release := os.Getenv("NHC_NODE_RELEASE")
	require.NotEmpty(t, binDir, "K8S_BINARIES")
	require.NotEmpty(t, release, "NHC_NODE_RELEASE")
	archives, err := filepath.Glob(filepath.Join(release, "nhc-controller-*-oci.tar"))
	require.NoError(t, err)
	require.Len(t, archives, 1, "the release's image, as an OCI archive, in %s", release)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	env, err := framework.NewEnv(&controlplane.ControlPlane{Config: config, Kubeconfig: kubeconfig, BinDir: binDir})
	require.NoError(t, err)
	return &cluster{env: env, kube: env.Kube, kubectl: filepath.Join(binDir, "kubectl"), release: release, archive: archives[0], start: time.Now()}
}

// script runs hack/node/cluster.sh, failing the test when it fails.
func (c *cluster) script(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(controlplane.RepoRoot(), "hack", "node", "cluster.sh")}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "cluster.sh %s: %s", strings.Join(args, " "), out.String())
	return out.String()
}

// run runs kubectl as the cluster's admin and returns its standard output
// and standard error.
func (c *cluster) run(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(c.kubectl, append([]string{"--kubeconfig", c.env.Cluster.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

// must runs kubectl and fails the test when it fails.
func (c *cluster) must(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := c.run(args...)
	require.NoError(t, err)
	return out
}

// step logs the start of a part of the test, with the time since the start.
func (c *cluster) step(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("[%5.1fs] %s", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// eventually polls a condition every 250 ms.
func eventually(t *testing.T, timeout time.Duration, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	require.NoError(t, err, "waiting %v for %s", timeout, what)
}

// condition returns a node's condition of a type.
func condition(node *corev1.Node, conditionType corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == conditionType {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func (c *cluster) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	node, err := c.kube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return node
}

// controllerPods lists the controller's pods, terminating ones included.
func (c *cluster) controllerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := c.kube.CoreV1().Pods(framework.InstallNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nhc-controller"})
	require.NoError(t, err)
	return pods.Items
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dumpOnFailure prints what a failing run needs to be understood: the
// nodes, the controller's pods and their logs, the events of its
// namespace, and where the components' logs are.
func (c *cluster) dumpOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, args := range [][]string{
			{"get", "nodes", "-o", "wide"},
			{"describe", "nodes"},
			{"get", "pods", "-A", "-o", "wide"},
			{"describe", "pods", "-n", framework.InstallNamespace},
			{"get", "events", "-A", "--sort-by", ".lastTimestamp"},
			{"logs", "-n", framework.InstallNamespace, "-l", "app.kubernetes.io/name=nhc-controller", "--all-containers", "--prefix", "--timestamps", "--tail", "200"},
		} {
			out, stderr, _ := c.run(args...)
			t.Logf("kubectl %s:\n%s%s", strings.Join(args, " "), out, stderr)
		}
		t.Logf("the components' logs: %s/logs", filepath.Dir(filepath.Dir(c.env.Cluster.Kubeconfig)))
	})
}
