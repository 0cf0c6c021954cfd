package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
)

// createFromFile creates the NodeHealthCheck in a YAML file, as kubectl
// create would, and returns it as the API server stored it.
func createFromFile(t *testing.T, path string) *v1alpha1.NodeHealthCheck {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	nhc := &v1alpha1.NodeHealthCheck{}
	require.NoError(t, yaml.UnmarshalStrict(data, nhc))
	created, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().Create(context.Background(), nhc, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = nhcClient.RemediationV1alpha1().NodeHealthChecks().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	return created
}

func TestSpecExamplesAreAccepted(t *testing.T) {
	samples, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, samples)
	for _, sample := range samples {
		t.Run(filepath.Base(sample), func(t *testing.T) {
			nhc := createFromFile(t, sample)
			assert.Equal(t, v1alpha1.DefaultUnhealthyConditions(), nhc.Spec.UnhealthyConditions)
		})
	}
}

func TestSpecExampleKeepsEveryField(t *testing.T) {
	nhc := createFromFile(t, filepath.Join(controlplane.RepoRoot(), "manifests", "samples", "nhc-worker-escalating.yaml"))
	require.Len(t, nhc.Spec.EscalatingRemediations, 2)
	second := nhc.Spec.EscalatingRemediations[1]
	assert.Equal(t, corev1.ObjectReference{
		APIVersion: "reprovision.example.com/v1", Kind: "ReprovisionRemediationTemplate",
		Namespace: "example", Name: "reprovision-remediation-template",
	}, second.RemediationTemplate)
	assert.Equal(t, 2, second.Order)
	assert.Equal(t, 30*time.Minute, second.Timeout.Duration)
	assert.Equal(t, intstr.FromString("51%"), *nhc.Spec.MinHealthy)
	assert.Nil(t, nhc.Spec.RemediationTemplate)
	assert.Len(t, nhc.Spec.Selector.MatchExpressions, 2)
}

func TestUpstreamObjectsAreAccepted(t *testing.T) {
	t.Run("storm cooldown, negative healthyDelay, custom condition", func(t *testing.T) {
		nhc := createFromFile(t, filepath.Join("testdata", "upstream-nhc.yaml"))
		require.NotNil(t, nhc.Spec.StormCooldownDuration)
		assert.Equal(t, 30*time.Second, nhc.Spec.StormCooldownDuration.Duration)
		assert.Nil(t, nhc.Spec.StormRecoveryThreshold)
		assert.Equal(t, -time.Second, nhc.Spec.HealthyDelay.Duration)
		assert.Equal(t, intstr.FromInt32(2), *nhc.Spec.MinHealthy)
		assert.Equal(t, "0b8bdf5e-7a3c-4d3b-9d9e-2f4f3c2b1a00", string(nhc.Spec.RemediationTemplate.UID))
		assert.Len(t, nhc.Spec.UnhealthyConditions, 3)
	})
	t.Run("maxUnhealthy, two templates of one kind, defaulted conditions", func(t *testing.T) {
		nhc := createFromFile(t, filepath.Join("testdata", "upstream-nhc-maxunhealthy.yaml"))
		assert.Equal(t, intstr.FromString("49%"), *nhc.Spec.MaxUnhealthy)
		assert.Len(t, nhc.Spec.EscalatingRemediations, 2)
		assert.Equal(t, v1alpha1.DefaultUnhealthyConditions(), nhc.Spec.UnhealthyConditions)
	})
}
