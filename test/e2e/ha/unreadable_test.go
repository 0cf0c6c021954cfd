package ha

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	nhcResource = v1alpha1.SchemeGroupVersion.WithResource("nodehealthchecks")
)

const nhcCRD = "nodehealthchecks.remediation.medik8s.io"

// unreadableNHC is a NodeHealthCheck the CRD accepts today only without its
// validation: a cooldown that overflows Go's durations.
func unreadableNHC(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "remediation.medik8s.io/v1alpha1", "kind": "NodeHealthCheck",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"selector":              map[string]any{"matchLabels": map[string]any{framework.ScenarioLabel: name}},
			"minHealthy":            0,
			"remediationTemplate":   map[string]any{"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate", "namespace": framework.RemediatorNamespace, "name": name},
			"stormCooldownDuration": "9999999h",
		},
	}}
}

// storeUnderALooserCRD stores an object the CRD rejects, as one stored under
// an older CRD would be: the CRD's spec schema is loosened for the create,
// then restored.
func storeUnderALooserCRD(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	crds := env.Dynamic.Resource(crdResource)
	original, err := crds.Get(ctx, nhcCRD, metav1.GetOptions{})
	require.NoError(t, err)
	loose := original.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(loose.Object, "spec", "versions")
	version := versions[0].(map[string]any)
	require.NoError(t, unstructured.SetNestedField(version, map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
		"schema", "openAPIV3Schema", "properties", "spec"))
	require.NoError(t, unstructured.SetNestedSlice(loose.Object, versions, "spec", "versions"))
	_, err = crds.Update(ctx, loose, metav1.UpdateOptions{})
	require.NoError(t, err)
	restore := func() {
		current, err := crds.Get(ctx, nhcCRD, metav1.GetOptions{})
		require.NoError(t, err)
		current.Object["spec"] = original.Object["spec"]
		_, err = crds.Update(ctx, current, metav1.UpdateOptions{})
		require.NoError(t, err)
		// Only the looser CRD takes a NodeHealthCheck without a selector.
		probe := unreadableNHC("probe")
		unstructured.RemoveNestedField(probe.Object, "spec", "selector")
		framework.Eventually(t, 30*time.Second, "the CRD's validation to be back", func() bool {
			_, err := env.Dynamic.Resource(nhcResource).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err != nil
		})
	}
	defer restore()
	framework.Eventually(t, 30*time.Second, "the looser CRD to store the object", func() bool {
		_, err := env.Dynamic.Resource(nhcResource).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil
	})
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(nhcResource).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	})
}

func TestAnUnreadableNodeHealthCheckStopsNoOther(t *testing.T) {
	const scenario, broken = "readable", "unreadable"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, nil)
	storeUnderALooserCRD(t, unreadableNHC(broken))

	disabled := func() bool {
		u, err := env.Dynamic.Resource(nhcResource).Get(context.Background(), broken, metav1.GetOptions{})
		require.NoError(t, err)
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conditions {
			c := c.(map[string]any)
			if c["type"] == v1alpha1.ConditionDisabled && c["status"] == string(metav1.ConditionTrue) && c["reason"] == v1alpha1.ReasonInvalidSpec {
				message, _ := c["message"].(string)
				return assert.Contains(t, message, "The stored NodeHealthCheck cannot be read") && assert.Contains(t, message, "9999999h")
			}
		}
		return false
	}

	// A controller that starts while the object exists syncs its caches and
	// remediates for the others; one that runs when it appears goes on too.
	for i, name := range []string{"unreadable-1", "unreadable-2"} {
		c, err := env.StartController(name, "--leader-elect=false")
		require.NoError(t, err)
		dumpOnFailure(t, c)
		framework.Eventually(t, 30*time.Second, "the unreadable NodeHealthCheck to be disabled with the reason", disabled)
		env.Fail(t, time.Hour, nodes[i])
		framework.Eventually(t, 30*time.Second, "the other NodeHealthCheck to remediate", func() bool {
			return len(env.Remediations(t, scenario)[nodes[i]]) == 1
		})
		status := env.GetNHC(t, scenario).Status
		assert.False(t, meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionDisabled))
		require.NoError(t, c.Stop(), "a restart while the object exists")
	}
}
