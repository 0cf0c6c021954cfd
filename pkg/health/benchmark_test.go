package health

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// benchmarkInput is a cluster of n nodes in a bad hour: 2% unhealthy with a
// remediation, 1% unhealthy without one yet, 1% soon unhealthy, 1% healthy
// again with a remediation to delete, the rest healthy.
func benchmarkInput(n int) Input {
	in := Input{NHC: testNHC(minHealthy(intstr.FromString("51%")), stormThreshold(int32(n/10))), Remediations: map[string][]Remediation{}, Now: now}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		var node *nodeview.Node
		switch i % 100 {
		case 0, 1:
			node = testNode(name, unhealthy)
			in.Remediations[name] = []Remediation{snrRemediation(name, 10*time.Minute)}
		case 2:
			node = testNode(name, unhealthy)
		case 3:
			node = testNode(name, notReady(time.Minute))
		case 4:
			node = testNode(name)
			in.Remediations[name] = []Remediation{snrRemediation(name, 10*time.Minute)}
		default:
			node = testNode(name, condition("MemoryPressure", corev1.ConditionFalse, time.Hour), condition("DiskPressure", corev1.ConditionFalse, time.Hour))
		}
		in.Nodes = append(in.Nodes, node)
	}
	// The previous evaluation's status, as the controller would have written it.
	in.NHC.Status = decide(in).Status
	return in
}

func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			in := benchmarkInput(n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Evaluate(in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// BenchmarkStatus builds the status of the plan Evaluate made, as each sync
// does after carrying it out.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			in := benchmarkInput(n)
			plan := Evaluate(in)
			out := Outcome{TimedOut: plan.TimeOut, Deleted: plan.Delete}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Status(in, &plan, &out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}
