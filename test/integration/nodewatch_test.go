package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
)

// The node cache with the deployment's batch window, on the real API
// server: while every node is healthy its watch is read in batches, and
// between two reads its socket is muted (SO_RCVLOWAT raised). A change
// that arrives then is read when the window ends, not when the socket
// holds enough to wake the process.
func TestAChangeArrivingWhileTheWindowIsWaitedIsRead(t *testing.T) {
	const window = 300 * time.Millisecond
	informer, err := nodecache.NewInformer(cluster.Config, window)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Informer().RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced))

	name := fw.CreateNode(t, "windowed", "windowed-0").Name
	lister := informer.Lister()
	readyIs := func(status corev1.ConditionStatus) func() bool {
		return func() bool {
			node, err := lister.Get(name)
			if err != nil {
				return false
			}
			for _, condition := range node.Conditions {
				if condition.Type() == corev1.NodeReady {
					return condition.Status() == status
				}
			}
			return false
		}
	}
	require.Eventually(t, readyIs(corev1.ConditionTrue), 30*time.Second, 10*time.Millisecond, "the node is cached, Ready")
	// Heartbeats, a few to a window: the watch's reads are paced, and
	// its socket muted between them.
	for range 6 {
		fw.Heartbeat(t, name)
		time.Sleep(window / 3)
	}
	fw.Fail(t, 0, name)
	require.Eventually(t, readyIs(corev1.ConditionFalse), 30*time.Second, 10*time.Millisecond, "the change is read once the window ends")
}
