package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// TestAMassFailureStatusIsWritable writes the status of a 10,000-node mass
// failure, every node under remediation, to the real API server: it must be
// accepted (the CRD's bounds, etcd's object limit) and stay under 1 MiB.
func TestAMassFailureStatusIsWritable(t *testing.T) {
	nhc := fw.CreateNHC(t, "massfailure", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy, s.MaxUnhealthy = nil, ptr.To(intstr.FromString("100%"))
	})
	template := framework.TemplateRef("massfailure")
	now := time.Now()
	in := health.Input{NHC: nhc, Remediations: map[string][]health.Remediation{}, Now: now}
	for i := range 10000 {
		name := fmt.Sprintf("massfailure-worker-%05d.cluster.example.com", i)
		in.Nodes = append(in.Nodes, &nodeview.Node{
			Meta:       nodeview.Meta{Name: name},
			Conditions: []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, corev1.ConditionFalse, now.Add(-time.Hour))},
		})
		in.Remediations[name] = []health.Remediation{{
			Ref: corev1.ObjectReference{APIVersion: template.APIVersion, Kind: "TestRemediation", Namespace: template.Namespace, Name: name,
				UID: types.UID(fmt.Sprintf("0b6c1d9e-3f47-4a8e-9c1b-%012d", i))},
			TemplateName: template.Name, Created: now.Add(-time.Minute),
		}}
	}
	plan := health.Evaluate(in)
	status := health.Status(in, &plan, &health.Outcome{})

	nhc.Status = status
	written, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().UpdateStatus(context.Background(), nhc, metav1.UpdateOptions{})
	require.NoError(t, err, "the API server accepts the status")
	data, err := json.Marshal(written)
	require.NoError(t, err)
	assert.Less(t, len(data), 1<<20, "the stored object stays under 1 MiB")
	assert.Equal(t, int32(10000), *written.Status.RemediatingNodes)
	assert.NotEmpty(t, written.Status.UnhealthyNodes)
	t.Logf("stored object: %d bytes, %d of 10000 nodes listed", len(data), len(written.Status.UnhealthyNodes))
}
