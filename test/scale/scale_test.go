// Package scale measures the controller on a real API server with thousands
// of nodes. It reports numbers; it asserts no timings. Run it with make scale.
package scale

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// nodeCount is the cluster size, NHC_SCALE_NODES or 5,000.
func nodeCount() int {
	if n, err := strconv.Atoi(os.Getenv("NHC_SCALE_NODES")); err == nil && n > 0 {
		return n
	}
	return 5000
}

// BenchmarkFailureToRemediation reports, for a cluster of nodeCount nodes,
// how long it takes from a node's condition expiring to its remediation
// resource existing and to the status listing it, and the controller's
// memory. Each iteration fails one more node and recovers it.
func BenchmarkFailureToRemediation(b *testing.B) {
	const scenario = "scale"
	env, controller := startCluster(b, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: time.Second}
	})
	defer env.Stop()
	defer func() { _ = controller.Stop() }()
	count := nodeCount()

	var toResource, toStatus time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		node := fmt.Sprintf("%s-%05d", scenario, i%count)
		// The stored transition time has one-second precision: measure from it.
		failed := env.SetCondition(b, node, corev1.NodeReady, corev1.ConditionFalse, 0)
		expires := failed.Status.Conditions[0].LastTransitionTime.Add(time.Second)
		framework.Eventually(b, time.Minute, "the remediation", func() bool { return len(env.Remediations(b, scenario)[node]) == 1 })
		toResource += time.Since(expires)
		framework.Eventually(b, time.Minute, "the status", func() bool {
			s := env.GetNHC(b, scenario).Status
			return s.RemediatingNodes != nil && *s.RemediatingNodes == 1
		})
		toStatus += time.Since(expires)
		env.Recover(b, node)
		framework.Eventually(b, time.Minute, "the cleanup", func() bool { return len(env.Remediations(b, scenario)) == 0 })
	}
	b.StopTimer()
	b.ReportMetric(float64(toResource.Milliseconds())/float64(b.N), "ms-to-remediation")
	b.ReportMetric(float64(toStatus.Milliseconds())/float64(b.N), "ms-to-status")
	b.ReportMetric(float64(count), "nodes")
	b.ReportMetric(residentMiB(controller), "controller-RSS-MiB")
}

// startCluster starts a control plane with nodeCount Ready nodes, a
// NodeHealthCheck with minHealthy 51% selecting them, and the controller, and
// waits for its first full sync.
func startCluster(b *testing.B, scenario string, change func(*v1alpha1.NodeHealthCheckSpec)) (*framework.Env, *framework.Controller) {
	env, err := framework.StartEnv()
	if err != nil {
		b.Fatal(err)
	}
	count := nodeCount()
	started := time.Now()
	if err := createNodes(env, scenario, count); err != nil {
		env.Stop()
		b.Fatal(err)
	}
	b.Logf("created %d nodes in %v", count, time.Since(started).Round(time.Millisecond))
	env.CreateTemplate(b, scenario, nil)
	env.CreateNHC(b, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromString("51%"))
		change(s)
	})
	started = time.Now()
	controller, err := env.StartController(scenario, "--leader-elect=false", "-v=0")
	if err != nil {
		env.Stop()
		b.Fatal(err)
	}
	framework.Eventually(b, 5*time.Minute, "the first sync", func() bool {
		s := env.GetNHC(b, scenario).Status
		return s.ObservedNodes != nil && int(*s.ObservedNodes) == count
	})
	b.Logf("first full sync %v after the controller started", time.Since(started).Round(time.Millisecond))
	return env, controller
}

// createNodes creates Ready nodes in parallel.
func createNodes(env *framework.Env, scenario string, count int) error {
	config := *env.Cluster.Config
	config.QPS, config.Burst = 2000, 4000
	client := kubernetes.NewForConfigOrDie(&config)
	names := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range names {
				if err := createReadyNode(client, scenario, name); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range count {
		names <- fmt.Sprintf("%s-%05d", scenario, i)
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func createReadyNode(client kubernetes.Interface, scenario, name string) error {
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{framework.ScenarioLabel: scenario, "node-role.kubernetes.io/worker": ""},
	}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	hour := metav1.NewTime(time.Now().Add(-time.Hour))
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: hour, LastHeartbeatTime: metav1.Now()},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: hour, LastHeartbeatTime: metav1.Now()},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastTransitionTime: hour, LastHeartbeatTime: metav1.Now()},
	}
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// residentMiB reads the controller process's resident memory.
func residentMiB(c *framework.Controller) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.PID()))
	if err != nil {
		return 0
	}
	var kib float64
	for _, line := range splitLines(string(data)) {
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kib); err == nil {
			return kib / 1024
		}
	}
	return 0
}

func splitLines(s string) []string {
	var lines []string
	start := 0
	for i := range s {
		if s[i] == '\n' {
			lines = append(lines, s[start:i])
			start = i + 1
		}
	}
	return lines
}
