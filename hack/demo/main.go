// Command demo shows nhc-controller at work on a local control plane: it
// starts kube-apiserver and etcd, simulates worker nodes, runs the
// nhc-controller binary, breaks two nodes, and lets a simulated remediator
// bring them back, printing what kubectl shows at each step.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

func main() {
	nodes := flag.Int("nodes", 6, "simulated worker nodes")
	keep := flag.Bool("keep", false, "keep the control plane and controller running after the demo, until Ctrl-C")
	flag.Parse()
	if err := run(*nodes, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

type demo struct {
	env   *framework.Env
	start time.Time
}

func (d *demo) say(format string, args ...any) {
	fmt.Printf("[%3.0fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func (d *demo) kubectl(args ...string) {
	out, err := d.env.Cluster.Kubectl(args...)
	if err != nil {
		out = err.Error()
	}
	fmt.Printf("      $ kubectl %s\n", strings.Join(args, " "))
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		fmt.Println("      " + line)
	}
}

// kubectlNHC runs the kubectl nhc plugin in-process against the demo's
// control plane, and prints it as kubectl prints.
func (d *demo) kubectlNHC(ctx context.Context, args ...string) {
	var out bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: &out, ErrOut: &out}, time.Now)
	cmd.SetArgs(append([]string{"--kubeconfig", d.env.Cluster.Kubeconfig}, args...))
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(&out, "error:", err)
	}
	fmt.Printf("      $ kubectl nhc %s\n", strings.Join(args, " "))
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		fmt.Println("      " + line)
	}
}

func run(nodeCount int, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d := &demo{start: time.Now()}
	d.say("Building nhc-controller and starting kube-apiserver + etcd (the first run builds them from source: ~8 minutes)")
	env, err := framework.StartEnv()
	if err != nil {
		return err
	}
	defer env.Stop()
	d.env = env
	controller, err := env.StartController("demo", "--leader-elect=false", "-v=0")
	if err != nil {
		return err
	}
	defer func() { _ = controller.Stop() }()

	workers, err := d.setUp(ctx, nodeCount)
	if err != nil {
		return err
	}
	broken := []string{workers[1], workers[3]}
	if err := d.breakNodes(ctx, broken); err != nil {
		return err
	}
	if err := d.recoverNodes(ctx, broken, nodeCount); err != nil {
		return err
	}
	if keep {
		d.say("Still running. Try: %s/kubectl --kubeconfig %s get nhc -o yaml   (Ctrl-C to stop)", env.Cluster.BinDir, env.Cluster.Kubeconfig)
		<-ctx.Done()
	}
	d.say("Demo complete")
	return nil
}

// setUp creates the worker nodes, Ready, the template and the
// NodeHealthCheck, and waits for the controller to observe the nodes; it
// returns the nodes' names.
func (d *demo) setUp(ctx context.Context, nodeCount int) ([]string, error) {
	env := d.env
	workers := make([]string, nodeCount)
	for i := range workers {
		workers[i] = fmt.Sprintf("worker-%d", i)
		if err := createNode(ctx, env, workers[i]); err != nil {
			return nil, err
		}
	}
	if err := createTemplate(ctx, env); err != nil {
		return nil, err
	}
	nhc := workersNHC()
	if _, err := env.NHC.RemediationV1alpha1().NodeHealthChecks().Create(ctx, nhc, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	d.say("%d Ready worker nodes; NodeHealthCheck %q remediates a node that is not Ready for 10s, while at least 51%% are healthy", nodeCount, nhc.Name)
	if err := d.waitFor(ctx, "the controller to observe the nodes", func(s v1alpha1.NodeHealthCheckStatus) bool {
		return s.HealthyNodes != nil && int(*s.HealthyNodes) == nodeCount
	}); err != nil {
		return nil, err
	}
	d.kubectl("get", "nhc", "-o", "wide")
	return workers, nil
}

// workersNHC is the demo's NodeHealthCheck: it remediates a worker node that
// is not Ready for 10s, while at least 51% are healthy.
func workersNHC() *v1alpha1.NodeHealthCheck {
	return &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "workers"},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: v1alpha1.ControlPlaneRoleLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			RemediationTemplate: &corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: "TestRemediationTemplate", Namespace: framework.RemediatorNamespace, Name: "reboot"},
			MinHealthy:          ptr.To(intstr.FromString("51%")),
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 10 * time.Second}},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: metav1.Duration{Duration: 10 * time.Second}},
			},
		},
	}
}

// breakNodes turns the broken nodes' Ready condition Unknown and shows the
// remediations the controller creates for them.
func (d *demo) breakNodes(ctx context.Context, broken []string) error {
	d.say("%s stop reporting: their Ready condition turns Unknown", strings.Join(broken, " and "))
	for _, n := range broken {
		if err := setReady(ctx, d.env, n, corev1.ConditionUnknown); err != nil {
			return err
		}
	}
	if err := pause(ctx, 3*time.Second); err != nil {
		return err
	}
	d.say("kubectl nhc why asks the controller's engine what it does with %s, and when", broken[0])
	d.kubectlNHC(ctx, "why", broken[0])
	if err := d.waitFor(ctx, "the remediations", func(s v1alpha1.NodeHealthCheckStatus) bool {
		return s.RemediatingNodes != nil && int(*s.RemediatingNodes) == len(broken)
	}); err != nil {
		return err
	}
	d.say("10s later the controller created a remediation resource for each, from the template")
	d.kubectl("get", "nhc")
	d.kubectl("get", "testremediations", "-n", framework.RemediatorNamespace, "-o",
		`custom-columns=NAME:.metadata.name,NODE:.metadata.annotations.remediation\.medik8s\.io/node-name,TEMPLATE:.metadata.annotations.remediation\.medik8s\.io/template-name,OWNER:.metadata.ownerReferences[0].name`)
	return nil
}

// recoverNodes shows the remediation under way, brings the broken nodes back
// Ready, and shows the cleanup, the events and the history.
func (d *demo) recoverNodes(ctx context.Context, broken []string, nodeCount int) error {
	d.say("The remediator reboots them (3s); meanwhile kubectl nhc shows the budget, the nodes under remediation, and why %s is remediated", broken[0])
	if err := pause(ctx, 2*time.Second); err != nil {
		return err
	}
	d.kubectlNHC(ctx, "status")
	d.kubectlNHC(ctx, "why", broken[0])
	if err := pause(ctx, time.Second); err != nil {
		return err
	}
	d.say("The reboots are done, and the nodes come back Ready")
	for _, n := range broken {
		if err := setReady(ctx, d.env, n, corev1.ConditionTrue); err != nil {
			return err
		}
	}
	if err := d.waitFor(ctx, "the cleanup", func(s v1alpha1.NodeHealthCheckStatus) bool {
		return s.Phase == v1alpha1.PhaseEnabled && s.HealthyNodes != nil && int(*s.HealthyNodes) == nodeCount
	}); err != nil {
		return err
	}
	d.say("The controller deleted the remediations; all nodes are healthy again")
	d.kubectl("get", "nhc")
	d.kubectl("get", "events", "-n", "default", "--field-selector", "involvedObject.kind=NodeHealthCheck", "--sort-by", ".metadata.creationTimestamp",
		"-o", "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message")
	d.say("kubectl nhc history shows each remediation: when the node was detected, remediated and healthy again")
	d.kubectlNHC(ctx, "history")
	return nil
}

// waitFor polls the NodeHealthCheck's status.
func (d *demo) waitFor(ctx context.Context, what string, done func(v1alpha1.NodeHealthCheckStatus) bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		nhc, err := d.env.NHC.RemediationV1alpha1().NodeHealthChecks().Get(ctx, "workers", metav1.GetOptions{})
		if err == nil && done(nhc.Status) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("timed out waiting for %s", what)
}

// pause waits for d, or until the demo is interrupted.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func createNode(ctx context.Context, env *framework.Env, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	if _, err := env.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return err
	}
	return setReady(ctx, env, name, corev1.ConditionTrue)
}

// setReady writes a node's Ready condition, as its kubelet (or, for Unknown,
// the node lifecycle controller) would.
func setReady(ctx context.Context, env *framework.Env, name string, status corev1.ConditionStatus) error {
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Demo", LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	_, err = env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func createTemplate(ctx context.Context, env *framework.Env) error {
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": "reboot", "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot"}}},
	}}
	_, err := env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Create(ctx, tmpl, metav1.CreateOptions{})
	return err
}
