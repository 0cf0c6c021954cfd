package ha

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

const (
	// unownedRemediations of largeObjectBytes each belong to no
	// NodeHealthCheck: another operator's objects of a kind the controller
	// watches for its remediations.
	unownedRemediations = 200
	// unstreamedHighWaterBound is the most the controller's resident memory
	// may reach at a start that lists them without a streamed list, as
	// docs/operating.md states it: a page of whole objects at a time.
	unstreamedHighWaterBound = 128 << 20
	// noStreamedLists turns the client's streamed lists (WatchList) off, as
	// an API server without them makes the informers list.
	noStreamedLists = "KUBE_FEATURE_WatchListClient=false"
)

// A start that lists a remediation kind instead of streaming it (an API
// server without WatchList) reaches no more than a page of whole objects
// of the kind's unowned objects: 200 of 1 MiB, listed by a controller
// under the Deployment's GOMEMLIMIT, keep its high-water mark under
// unstreamedHighWaterBound (76 MiB measured), where a list decoded whole
// reached 637 MiB.
func TestAListWithoutStreamingHoldsAPageOfUnownedObjects(t *testing.T) {
	const scenario = "unstreamed"
	env.CreateTemplate(t, scenario, nil)
	env.CreateNHC(t, scenario, nil)
	createUnownedRemediations(t, scenario+"-elsewhere", unownedRemediations)

	c, err := env.StartControllerWithEnv(scenario, []string{deploymentMemoryLimit, noStreamedLists},
		"--leader-elect=true", "--leader-election-namespace=default", "--leader-election-id=nhc-"+scenario, "--node-leases=false")
	require.NoError(t, err)
	dumpOnFailure(t, c)
	defer func() { assert.NoError(t, c.Stop()) }()
	framework.Eventually(t, 60*time.Second, "the NodeHealthCheck enabled", func() bool { return enabled(t, scenario) })
	time.Sleep(5 * time.Second)
	highWater, settled := memoryStatus(t, c.PID(), "VmHWM"), settledMemory(t, c)
	t.Logf("listing %d unowned remediations of 1 MiB without a streamed list: resident memory at most %d MiB, %d MiB settled", unownedRemediations, highWater>>20, settled>>20)
	assert.Less(t, highWater, int64(unstreamedHighWaterBound))
	assert.NotContains(t, c.Log(), "Lost the lease", "the lease renewed throughout")
}

// createUnownedRemediations creates count TestRemediations of about
// largeObjectBytes, owned by nothing, in a namespace of their own,
// deleted when the test ends.
func createUnownedRemediations(t *testing.T, namespace string, count int) {
	t.Helper()
	ownNamespace(t, namespace)
	for i := range count {
		_, err := env.Dynamic.Resource(framework.RemediationResource).Namespace(namespace).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediation",
			"metadata": map[string]any{"name": fmt.Sprint("unowned-", i), "namespace": namespace},
			"spec":     map[string]any{"fill": strings.Repeat("x", largeObjectBytes-1024)},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}
