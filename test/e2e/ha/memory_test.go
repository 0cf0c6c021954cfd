package ha

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

const (
	// largeObjectBytes is the size of the large templates: about the most
	// etcd stores in one object.
	largeObjectBytes = 1 << 20
	// unrelatedObjects are created in a namespace no NodeHealthCheck names,
	// after warmUpObjects: the first objects the controller ever sees page
	// in the code that handles them, once.
	unrelatedObjects, warmUpObjects = 1000, 50
	// unrelatedGrowthBound is the most the controller's resident memory may
	// grow for them: 2 KiB an object. A template kind is watched for
	// metadata alone and each object costs a shell of its name, about 250
	// bytes (docs/operating.md); the rest is heap the Go runtime has not
	// returned yet, which varies by a few hundred KiB from run to run. An
	// object kept whole would cost 1 MiB, 500 times the bound.
	unrelatedGrowthBound = unrelatedObjects * 2 << 10
	// restartedGrowthBound bounds a restarted controller, which lists them
	// all at once, against the first before them.
	restartedGrowthBound = unrelatedObjects * 3 << 10
)

// largeTemplate is a TestRemediationTemplate whose spec.template holds
// about largeObjectBytes.
func largeTemplate(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"fill": strings.Repeat("x", largeObjectBytes-1024)}}},
	}}
}

// createLargeTemplates creates large templates first to first+count-1 in a
// namespace of their own, deleted when the test ends.
func createLargeTemplates(t *testing.T, namespace string, first, count int) {
	t.Helper()
	ownNamespace(t, namespace)
	for i := first; i < first+count; i++ {
		_, err := env.Dynamic.Resource(framework.TemplateResource).Namespace(namespace).Create(context.Background(), largeTemplate(namespace, fmt.Sprint("large-", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// ownNamespace creates a namespace, unless it exists, deleted when the
// test ends.
func ownNamespace(t *testing.T, namespace string) {
	t.Helper()
	_, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), namespace, metav1.DeleteOptions{})
	})
}

// settledMemory is the controller's resident memory once it settled: the
// least of a few samples a second apart.
func settledMemory(t *testing.T, c *framework.Controller) int64 {
	least := residentMemory(t, c.PID())
	for range 5 {
		time.Sleep(time.Second)
		least = min(least, residentMemory(t, c.PID()))
	}
	return least
}

// Objects of a watched kind that no NodeHealthCheck names cost the
// controller their shell: 1,000 MiB of templates in another
// namespace move its resident memory by less than unrelatedGrowthBound,
// while it runs and after a restart, which lists them.
func TestUnrelatedLargeObjectsCostNothing(t *testing.T) {
	const scenario = "unrelated-large"
	env.CreateTemplate(t, scenario, nil)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartController(scenario, "--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-"+scenario, "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	framework.Eventually(t, 30*time.Second, "the NodeHealthCheck enabled", func() bool { return enabled(t, scenario) })
	createLargeTemplates(t, scenario+"-elsewhere", 0, warmUpObjects)
	time.Sleep(5 * time.Second)
	before := settledMemory(t, c)

	createLargeTemplates(t, scenario+"-elsewhere", warmUpObjects, unrelatedObjects)
	time.Sleep(10 * time.Second)
	after := settledMemory(t, c)
	t.Logf("resident memory %d KiB before %d unrelated templates of 1 MiB, %d KiB after", before>>10, unrelatedObjects, after>>10)
	assert.Less(t, after-before, int64(unrelatedGrowthBound), "resident memory grew by less than the bound")

	require.NoError(t, c.Stop())
	restarted, err := env.StartController(scenario+"-restarted", "--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-"+scenario, "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, restarted)
	defer func() { assert.NoError(t, restarted.Stop()) }()
	framework.Eventually(t, 60*time.Second, "the restarted leader", func() bool { return strings.Contains(restarted.Log(), `"Became the leader"`) })
	time.Sleep(10 * time.Second)
	listed := settledMemory(t, restarted)
	t.Logf("resident memory %d KiB after a restart that listed them", listed>>10)
	assert.Less(t, listed-before, int64(restartedGrowthBound), "after a restart too")
}

// A referenced template over the limit is refused: its NodeHealthCheck
// says why, in its status and an event, and remediates no node.
func TestATemplateOverTheLimitIsRefused(t *testing.T) {
	const scenario = "large-template"
	ctx := context.Background()
	_, err := env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Create(ctx, largeTemplate(framework.RemediatorNamespace, scenario), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(framework.TemplateResource).Namespace(framework.RemediatorNamespace).Delete(context.Background(), scenario, metav1.DeleteOptions{})
	})
	nodes := env.CreateNodes(t, scenario, 20)
	env.CreateNHC(t, scenario, nil)
	c, err := env.StartController(scenario, "--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-"+scenario, "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	env.Fail(t, time.Minute, nodes...)

	var message string
	framework.Eventually(t, 30*time.Second, "the NodeHealthCheck disabled for its template's size", func() bool {
		condition := meta.FindStatusCondition(env.GetNHC(t, scenario).Status.Conditions, v1alpha1.ConditionDisabled)
		if condition == nil || condition.Status != metav1.ConditionTrue {
			return false
		}
		message = condition.Message
		return condition.Reason == v1alpha1.ReasonTemplateInvalid
	})
	assert.Contains(t, message, "more than the 131072 a template may have")
	framework.Eventually(t, 10*time.Second, "an event that says so", func() bool {
		for _, e := range env.Events(t, scenario) {
			if strings.Contains(e.Message, "a template may have") {
				return true
			}
		}
		return false
	})
	framework.Consistently(t, 5*time.Second, "no remediation", func() bool { return len(env.Remediations(t, scenario)) == 0 })
	t.Logf("resident memory %d KiB with %d failed nodes", residentMemory(t, c.PID())>>10, len(nodes))
}

// enabled tells whether a NodeHealthCheck is enabled.
func enabled(t *testing.T, name string) bool {
	return meta.IsStatusConditionFalse(env.GetNHC(t, name).Status.Conditions, v1alpha1.ConditionDisabled)
}
