package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// nodeAt is a node with a resourceVersion.
func nodeAt(node *corev1.Node, resourceVersion string) *corev1.Node {
	node.ResourceVersion = resourceVersion
	return node
}

// A NodeHealthCheck's first evaluation waits until the cache shows every
// node the API server selects, as new as the API server has it; later ones
// do not ask the API server.
func TestTheFirstEvaluationWaitsForTheNodeCacheToCatchUp(t *testing.T) {
	tests := []struct {
		name string
		// cached and live are the nodes' resourceVersions in the cache and
		// at the API server.
		cached, live map[string]string
		evaluated    bool
	}{
		{name: "the cache shows every node", cached: map[string]string{"worker-1": "10", "worker-2": "11"},
			live: map[string]string{"worker-1": "10", "worker-2": "11"}, evaluated: true},
		{name: "the cache shows newer nodes", cached: map[string]string{"worker-1": "12", "worker-2": "13"},
			live: map[string]string{"worker-1": "10", "worker-2": "11"}, evaluated: true},
		{name: "a node created a moment ago is not cached yet", cached: map[string]string{"worker-1": "10"},
			live: map[string]string{"worker-1": "10", "worker-2": "11"}},
		{name: "a node's last update is not cached yet", cached: map[string]string{"worker-1": "10", "worker-2": "9"},
			live: map[string]string{"worker-1": "10", "worker-2": "11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC())
			for name, rv := range tt.cached {
				f.setNode(t, nodeAt(notReady(name, longAgo), rv))
			}
			f.liveNodes.versions = tt.live
			d, err := f.sync()
			require.NoError(t, err)
			if tt.evaluated {
				assert.Len(t, f.statuses.written, 1)
				assert.NotEqual(t, catchUpRequeue, d)
				return
			}
			assert.Equal(t, catchUpRequeue, d)
			assert.Empty(t, f.statuses.written, "no status from part of the nodes")
			assert.Empty(t, f.remediations.creates(), "no action from part of the nodes")

			f.setNode(t, nodeAt(notReady("worker-2", longAgo), "11"))
			_, err = f.sync()
			require.NoError(t, err)
			assert.Equal(t, int32(2), *f.lastStatus(t).ObservedNodes, "evaluated once the cache caught up")
			assert.Equal(t, 1, f.liveNodes.lists, "the nodes listed once")
		})
	}
}

func TestAnEvaluatedNodeHealthCheckAsksNoList(t *testing.T) {
	nhc := workersNHC()
	nhc.Status.ObservedNodes = ptr.To[int32](1)
	f := newSyncFixture(t, nhc, nodeAt(healthyNode("worker-1"), "10"))
	f.liveNodes.versions = map[string]string{"worker-1": "10", "worker-2": "11"}
	_, err := f.sync()
	require.NoError(t, err)
	assert.Zero(t, f.liveNodes.lists)
	assert.Len(t, f.statuses.written, 1)
}

// A node deleted after the list is never cached: the list is taken again
// after a while, and no longer holds it.
func TestANodeDeletedAfterTheListHoldsNothingBackForLong(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), nodeAt(healthyNode("worker-1"), "10"))
	f.liveNodes.versions = map[string]string{"worker-1": "10", "worker-2": "11"}
	d, err := f.sync()
	require.NoError(t, err)
	require.Equal(t, catchUpRequeue, d)

	delete(f.liveNodes.versions, "worker-2")
	f.clock.Step(catchUpRenew - time.Millisecond)
	d, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, catchUpRequeue, d, "the list stands until it is renewed")
	f.clock.Step(time.Millisecond)
	_, err = f.sync()
	require.NoError(t, err)
	assert.Equal(t, 2, f.liveNodes.lists)
	assert.Equal(t, int32(1), *f.lastStatus(t).ObservedNodes)
}

// A NodeHealthCheck older than the list the node cache started from needs
// no list of its own: every node that existed when it was created is
// cached, rather than each NodeHealthCheck listing its nodes at a start.
// One created since, or when that list is unknown, is listed as before.
func TestANodeHealthCheckOlderThanTheCacheAsksNoList(t *testing.T) {
	for _, tt := range []struct {
		name, nhcVersion, initialList string
		listed                        bool
	}{
		{name: "created before the cache's list", nhcVersion: "5", initialList: "9"},
		{name: "created at the cache's list", nhcVersion: "9", initialList: "9"},
		{name: "created after it", nhcVersion: "12", initialList: "9", listed: true},
		{name: "the cache's list unknown", nhcVersion: "5", listed: true},
		{name: "a resourceVersion that is no number", nhcVersion: "abc", initialList: "9", listed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nhc := workersNHC()
			nhc.ResourceVersion = tt.nhcVersion
			f := newSyncFixture(t, nhc, nodeAt(healthyNode("worker-1"), "10"))
			f.liveNodes.initialList = tt.initialList
			f.liveNodes.versions = map[string]string{"worker-1": "10"}
			_, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tt.listed, f.liveNodes.lists == 1)
			assert.Equal(t, int32(1), *f.lastStatus(t).ObservedNodes)
		})
	}
}
