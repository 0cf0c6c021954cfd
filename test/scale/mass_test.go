package scale

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// BenchmarkMassFailure reports how long it takes until a tenth of the
// cluster, failing at once, is under remediation, with the default client
// rate limits.
func BenchmarkMassFailure(b *testing.B) {
	const scenario = "mass"
	env, controller := startCluster(b, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: 0}
	})
	defer env.Stop()
	defer func() { _ = controller.Stop() }()
	failing := nodeCount() / 10
	for b.Loop() {
		started := time.Now()
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < failing; i += 16 {
					env.SetCondition(b, fmt.Sprintf("%s-%05d", scenario, i), corev1.NodeReady, corev1.ConditionFalse, 0)
				}
			})
		}
		wg.Wait()
		failed := time.Since(started)
		framework.Eventually(b, 10*time.Minute, "every failed node under remediation", func() bool {
			s := env.GetNHC(b, scenario).Status
			return s.RemediatingNodes != nil && int(*s.RemediatingNodes) == failing
		})
		b.ReportMetric(time.Since(started).Seconds(), "s-to-all-remediated")
		b.ReportMetric(failed.Seconds(), "s-to-fail-them")
		b.ReportMetric(float64(failing), "failed-nodes")
		b.ReportMetric(residentMiB(controller), "controller-RSS-MiB")
	}
}
