package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// The benchmark's own clients may send as fast as the API server takes.
const (
	benchQPS   = 5000
	benchBurst = 10000
)

// templateName is the one remediation template every NodeHealthCheck uses.
const templateName = "bench"

// bench is a control plane with the benchmark's nodes and NodeHealthChecks,
// the controller once started, and the watch on remediation resources.
type bench struct {
	cfg        *config
	env        *framework.Env
	kube       kubernetes.Interface
	nhcs       versioned.Interface
	kubeconfig string
	controller *framework.Controller
	tracker    *tracker
	audit      *auditReader
	// conditionTypes are the fixture's conditions, all renewed by a heartbeat.
	conditionTypes []corev1.NodeConditionType
	// kubelets send heartbeats and lease renewals from the quiet phase on,
	// with --heartbeats-throughout; else nil.
	kubelets  *kubelets
	tempDir   string
	stopWatch context.CancelFunc
	// profiler saves the controller's profiles with --profile, else nil.
	profiler *profiler
}

// startBench starts the control plane with the audit log, creates the
// nodes, the template and the NodeHealthChecks, and starts the watch.
func startBench(ctx context.Context, cfg *config, res *result) (*bench, error) {
	b := &bench{cfg: cfg}
	var err error
	if b.tempDir, err = os.MkdirTemp("", "nhc-scale-"); err != nil {
		return nil, err
	}
	flags, auditLog, err := auditFlags(b.tempDir)
	if err != nil {
		return b, err
	}
	b.audit = &auditReader{path: auditLog}
	if b.env, err = framework.StartEnvWithFlags(flags); err != nil {
		return b, err
	}
	if cfg.ControllerBinary != "" {
		b.env.Binary = cfg.ControllerBinary
	}
	config := *b.env.Cluster.Config
	config.QPS, config.Burst = benchQPS, benchBurst
	b.kube = kubernetes.NewForConfigOrDie(&config)
	b.nhcs = versioned.NewForConfigOrDie(&config)
	// The controller's own identity, with every right, tells its requests apart.
	if b.kubeconfig, err = b.env.Cluster.UserKubeconfig(controllerUser, "system:masters"); err != nil {
		return b, err
	}
	if b.conditionTypes, err = fixtureConditionTypes(); err != nil {
		return b, err
	}

	started := time.Now()
	if err := createNodes(ctx, cfg, b.kube); err != nil {
		return b, fmt.Errorf("creating the nodes: %w", err)
	}
	res.NodesCreatedSeconds = time.Since(started).Seconds()
	log.Printf("created %d nodes in %.1fs", cfg.Nodes, res.NodesCreatedSeconds)
	raw, err := b.kube.CoreV1().RESTClient().Get().Resource("nodes").Name(nodeName(0)).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return b, err
	}
	res.NodeBytes = len(raw)
	if cfg.LeaseRate > 0 {
		if err := createKubeletLeases(ctx, cfg, b.kube); err != nil {
			return b, fmt.Errorf("creating the node leases: %w", err)
		}
	}

	if err := b.createNHCs(ctx); err != nil {
		return b, err
	}
	allowed := map[string]int{}
	for g := range cfg.NHCs {
		allowed[groupName(g)], _ = allowedUnhealthy(cfg.MinHealthy, groupSize(cfg, g))
	}
	if cfg.Storm > allowed[groupName(0)] {
		log.Printf("warning: --storm %d is more than %s's minHealthy allows (%d): the storm is not remediated", cfg.Storm, groupName(0), allowed[groupName(0)])
	}
	b.tracker = newTracker(allowed)
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b.stopWatch = stop
	return b, b.tracker.run(watchCtx, b.env.Dynamic)
}

// createNHCs creates the template, the node lease namespace (the controller
// creates it at its first lease when missing; made here, as another medik8s
// operator would have, so that the first storm does not count it), and one
// NodeHealthCheck per group.
func (b *bench) createNHCs(ctx context.Context) error {
	leases := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeleases.Namespace()}}
	if _, err := b.env.Kube.CoreV1().Namespaces().Create(ctx, leases, metav1.CreateOptions{}); err != nil {
		return err
	}
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": templateName, "namespace": framework.RemediatorNamespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "reboot"}}},
	}}
	if _, err := b.env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		return err
	}
	duration := metav1.Duration{Duration: b.cfg.ConditionDuration}
	for g := range b.cfg.NHCs {
		nhc := &v1alpha1.NodeHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Name: groupName(g)},
			Spec: v1alpha1.NodeHealthCheckSpec{
				Selector:            metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: groupName(g)}},
				RemediationTemplate: ptr.To(framework.TemplateRef(templateName)),
				MinHealthy:          ptr.To(intstr.Parse(b.cfg.MinHealthy)),
				UnhealthyConditions: []v1alpha1.UnhealthyCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: duration},
					{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: duration},
				},
			},
		}
		if _, err := b.nhcs.RemediationV1alpha1().NodeHealthChecks().Create(ctx, nhc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// startController starts the controller as the audited user, with the
// deployment's log level and the extra flags.
func (b *bench) startController() error {
	flags := append([]string{"--v=0"}, b.cfg.controllerFlags()...)
	c, err := b.env.StartControllerWithKubeconfig("bench", b.kubeconfig, flags...)
	b.controller = c
	return err
}

// stop stops the controller, keeping its log, then the watch and the control
// plane, and removes the temporary files. With --profile, the audit log
// (every request of the controller, with its timestamps) is kept beside the
// controller's log.
func (b *bench) stop(logPath string) {
	if b.kubelets != nil {
		b.kubelets.halt()
	}
	if b.controller != nil {
		if err := b.controller.Stop(); err != nil {
			log.Printf("stopping the controller: %v", err)
		}
		if f, err := os.Create(logPath); err == nil {
			b.controller.DumpLog(f)
			_ = f.Close()
		}
	}
	if b.stopWatch != nil {
		b.stopWatch()
	}
	if b.env != nil {
		b.env.Stop()
	}
	if b.profiler != nil && b.audit != nil {
		kept := strings.TrimSuffix(logPath, "-controller.log") + "-audit.log"
		if err := copyFile(b.audit.path, kept); err != nil {
			log.Printf("warning: keeping the audit log: %v", err)
		}
	}
	_ = os.RemoveAll(b.tempDir)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFile(to, in)
}

func fixtureConditionTypes() ([]corev1.NodeConditionType, error) {
	var node corev1.Node
	if err := json.Unmarshal(nodeFixture, &node); err != nil {
		return nil, err
	}
	types := make([]corev1.NodeConditionType, len(node.Status.Conditions))
	for i, c := range node.Status.Conditions {
		types[i] = c.Type
	}
	return types, nil
}
