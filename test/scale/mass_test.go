package scale

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// BenchmarkMassFailure reports how long it takes until a tenth of the
// cluster, failing at once, is under remediation, with the default client
// rate limits.
func BenchmarkMassFailure(b *testing.B) {
	env, err := framework.StartEnv()
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop()
	count := nodeCount()
	failing := count / 10
	const scenario = "mass"
	if err := createNodes(env, scenario, count); err != nil {
		b.Fatal(err)
	}
	env.CreateTemplate(b, scenario, nil)
	env.CreateNHC(b, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromString("51%"))
		s.UnhealthyConditions[0].Duration = metav1.Duration{Duration: 0}
	})
	controller, err := env.StartController("mass", "--leader-elect=false", "-v=0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = controller.Stop() }()
	framework.Eventually(b, 5*time.Minute, "the first sync", func() bool {
		s := env.GetNHC(b, scenario).Status
		return s.ObservedNodes != nil && int(*s.ObservedNodes) == count
	})
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
