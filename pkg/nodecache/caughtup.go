package nodecache

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
)

// caughtUpPoll is how often CaughtUp looks at the cache's version while it
// waits.
const caughtUpPoll = 2 * time.Millisecond

// CaughtUp reads the API server's current resourceVersion of nodes (a
// consistent list of one node), and waits, at most wait, until the cache
// has stored every node change up to it: the cache then shows every node
// at least as new as the API server had it at the read. One read stands
// for a read of each node. It is false when the read fails, or the watch
// brings nothing that new within wait (a quiet cluster's watch moves on
// only with a change or a bookmark).
func (i *Informer) CaughtUp(ctx context.Context, wait time.Duration) bool {
	obj, err := i.lists.Get().Resource("nodes").VersionedParams(&metav1.ListOptions{Limit: 1}, scheme.ParameterCodec).Do(ctx).Get()
	list, ok := obj.(*NodeList)
	if err != nil || !ok {
		klog.FromContext(ctx).V(4).Info("Cannot read the API server's version of nodes", "err", err)
		return false
	}
	version := list.ResourceVersion
	store := i.informer.GetIndexer()
	reached := func() bool {
		order, err := resourceversion.CompareResourceVersion(store.LastStoreSyncResourceVersion(), version)
		return err == nil && order >= 0
	}
	if reached() {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ticker := time.NewTicker(caughtUpPoll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return reached()
		case <-ticker.C:
			if reached() {
				return true
			}
		}
	}
}
