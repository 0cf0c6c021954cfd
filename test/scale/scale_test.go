package main

import (
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

func TestNodesAreRealisticAndGroupedDisjointly(t *testing.T) {
	cfg := &config{Nodes: 1003, NHCs: 10}
	node, err := newNode(cfg, 1002)
	require.NoError(t, err)
	data, err := json.Marshal(node)
	require.NoError(t, err)
	// The API server adds about 1.5 KB of managed fields.
	assert.InDelta(t, 9800, len(data), 1000, "bytes as JSON")
	assert.Len(t, node.Status.Conditions, 10)
	assert.Equal(t, "node-01002", node.Labels["kubernetes.io/hostname"])

	for _, i := range []int{0, 49152, 99999} {
		node, err := newNode(&config{Nodes: 100000, NHCs: 1}, i)
		require.NoError(t, err)
		_, _, err = net.ParseCIDR(node.Spec.PodCIDR)
		assert.NoError(t, err, "node %d", i)
		assert.NotNil(t, net.ParseIP(node.Status.Addresses[0].Address), "node %d", i)
	}

	sizes := map[int]int{}
	for i := range cfg.Nodes {
		sizes[group(cfg, i)]++
	}
	total := 0
	for g := range cfg.NHCs {
		assert.Equal(t, groupSize(cfg, g), sizes[g], "group %d", g)
		total += groupSize(cfg, g)
	}
	assert.Equal(t, cfg.Nodes, total)
	assert.Equal(t, 0, group(cfg, groupSize(cfg, 0)-1), "the storm's nodes are the first group's first nodes")
}

func TestAllowedUnhealthyRoundsAsTheController(t *testing.T) {
	for minHealthy, want := range map[string]int{"60%": 399, "0": 999, "3": 996, "100%": 0} {
		got, err := allowedUnhealthy(minHealthy, 999)
		require.NoError(t, err)
		assert.Equal(t, want, got, minHealthy)
	}
	_, err := allowedUnhealthy("sixty", 999)
	assert.Error(t, err)
}

// The audit log holds every request, as a production cluster's does; the
// controller's are counted, once each.
func TestAuditCountsEachRequestOnce(t *testing.T) {
	counts := requestCounts{ByVerbResource: map[string]int{}}
	for _, line := range []string{
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseStarted","verb":"watch","objectRef":{"resource":"nodes"},"responseStatus":{"code":200}}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"watch","objectRef":{"resource":"nodes"},"responseStatus":{"code":200}}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"nodehealthchecks","subresource":"status"},"responseStatus":{"code":409}}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"get","requestURI":"/apis","responseStatus":{"code":200}}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"leases"},"responseStatus":{"code":200}}`,
		`{"user":{"username":"system:node:node-00001"},"stage":"ResponseComplete","verb":"patch","objectRef":{"resource":"nodes","subresource":"status"},"responseStatus":{"code":200}}`,
	} {
		var e auditEvent
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		counts.add(e)
	}
	assert.Equal(t, map[string]int{"watch nodes": 1, "update nodehealthchecks/status": 1, "get /apis": 1, "update leases": 1}, counts.ByVerbResource)
	assert.Equal(t, 4, counts.Total)
	assert.Equal(t, 1, counts.Leases)
	assert.Equal(t, 1, counts.Failed)
}

// The API server's time on a request is from its receipt to the response's
// end, by request kind; watches, which last minutes, are left out.
func TestAuditTellsTheAPIServersTimeByRequestKind(t *testing.T) {
	counts := requestCounts{ByVerbResource: map[string]int{}}
	for _, line := range []string{
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseStarted","verb":"watch","objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-11-26T00:00:00.000000Z","stageTimestamp":"2026-11-26T00:05:00.000000Z"}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"list","objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-11-26T00:00:00.000000Z","stageTimestamp":"2026-11-26T00:00:00.012000Z"}`,
		`{"user":{"username":"nhc-controller-bench"},"stage":"ResponseComplete","verb":"list","objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-11-26T00:00:01.000000Z","stageTimestamp":"2026-11-26T00:00:01.110000Z"}`,
	} {
		var e auditEvent
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		counts.add(e)
	}
	counts.summarizeServerTimes()
	assert.Equal(t, map[string]*latency{"list nodes": {Count: 2, P50: 12, P99: 110, Max: 110}}, counts.ServerTimeByVerbResource)
}

func TestSummarizeTakesNearestRanks(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, &latency{Count: 100, P50: 50, P99: 99, Max: 100}, summarize(ds))
	assert.Nil(t, summarize(nil))
}

// remediationObject is a remediation resource event as the watch delivers it.
func remediationObject(node, nhc string, version uint64) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetName(node)
	r.SetAnnotations(map[string]string{v1alpha1.NodeNameAnnotation: node})
	r.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeHealthCheck", Name: nhc}})
	r.SetResourceVersion(strconv.FormatUint(version, 10))
	return r
}

func TestOutcomesTellLateDuplicateAndOverBudgetResources(t *testing.T) {
	b := &bench{cfg: &config{ConditionDuration: 5 * time.Second}, tracker: newTracker(map[string]int{"bench-00": 2})}
	deadline := time.Now().Add(-time.Second)
	fail := func(node string, version uint64) written {
		return written{node: node, transition: deadline.Add(-5 * time.Second), version: version}
	}
	recovered := func(node string, version uint64) written {
		return written{node: node, sent: time.Now().Add(-time.Second), version: version}
	}
	b.tracker.record(remediationObject("a", "bench-00", 11), false)
	b.tracker.record(remediationObject("a", "bench-00", 12), false) // a second one for a
	b.tracker.record(remediationObject("b", "bench-00", 13), false) // a third for bench-00
	b.tracker.record(remediationObject("c", "bench-00", 30), false) // after c recovered at 20
	b.tracker.record(remediationObject("a", "bench-00", 40), true)
	b.tracker.record(remediationObject("a", "bench-00", 41), true)

	p := &phase{}
	b.outcomes(p, []written{fail("a", 1), fail("b", 2), fail("c", 3), fail("d", 4)},
		[]written{recovered("a", 20), recovered("b", 21), recovered("c", 20), recovered("d", 22)})
	assert.Equal(t, 8, p.Changes)
	assert.Equal(t, 4, p.Remediations)
	assert.Equal(t, 1, p.Late, "c's")
	require.NotNil(t, p.LateBy)
	assert.Equal(t, 1, p.Duplicates)
	assert.Equal(t, 2, p.BudgetViolations, "b's and c's")
	assert.Equal(t, 2, p.Missed, "c got its resource late, d none")
	assert.Equal(t, 2, p.Leftover, "b's and c's")
	require.NotNil(t, p.Detection)
	assert.Equal(t, 2, p.Detection.Count, "a and b")
	assert.GreaterOrEqual(t, p.Detection.P50, 1000.0)
	require.NotNil(t, p.Recovery)
	assert.Equal(t, 1, p.Recovery.Count, "a's first deletion")
}
