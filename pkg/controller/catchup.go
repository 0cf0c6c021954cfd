package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// A NodeHealthCheck created a moment after its nodes may be synced before
// the node cache shows them all. Evaluated on part of its nodes, it counts
// too few healthy ones: a storm that never was starts (and with a threshold
// may not end), and a percentage budget is taken of the wrong total. So its
// first evaluation waits until the cache shows every node the API server
// selected for it at that moment, at least as new as the API server had it.
const (
	// catchUpRequeue is how soon a NodeHealthCheck whose nodes the cache
	// does not show yet is tried again: the watch is usually milliseconds
	// behind.
	catchUpRequeue = 100 * time.Millisecond
	// catchUpRenew is how long a list stands: after it, the nodes are
	// listed again, so that a node deleted meanwhile, which the cache will
	// never show, holds nothing back for long.
	catchUpRenew = 10 * time.Second
)

// catchUps holds, by NodeHealthCheck name, the nodes that the cache did not
// show when its first evaluation was due.
type catchUps struct {
	mu     sync.Mutex
	byName map[string]catchUp
}

type catchUp struct {
	uid types.UID
	// behind are, by name, the nodes the cache did not show as new as this
	// resourceVersion.
	behind map[string]string
	listed time.Time
}

func newCatchUps() *catchUps { return &catchUps{byName: map[string]catchUp{}} }

// nodesCaughtUp tells whether a NodeHealthCheck may be evaluated: one that
// has been (its status counts observed nodes) may, and so may one whose
// nodes the cache shows as the API server did when it was first due.
func (c *Controller) nodesCaughtUp(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, selector labels.Selector) (bool, error) {
	if nhc.Status.ObservedNodes != nil {
		c.catchUps.forget(nhc.Name)
		return true, nil
	}
	if selector == nil {
		// Evaluate reports the selector; no node is selected.
		return true, nil
	}
	if c.olderThanTheCache(nhc) {
		c.catchUps.forget(nhc.Name)
		return true, nil
	}
	now := c.clock.Now()
	c.catchUps.mu.Lock()
	pending, ok := c.catchUps.byName[nhc.Name]
	c.catchUps.mu.Unlock()
	if !ok || pending.uid != nhc.UID || now.Sub(pending.listed) >= catchUpRenew {
		versions, err := c.liveNodes.Versions(ctx, selector)
		if err != nil {
			return false, err
		}
		pending = catchUp{uid: nhc.UID, behind: versions, listed: now}
	}
	for name, version := range pending.behind {
		if c.cacheShows(name, version) {
			delete(pending.behind, name)
		}
	}
	c.catchUps.mu.Lock()
	defer c.catchUps.mu.Unlock()
	if len(pending.behind) == 0 {
		delete(c.catchUps.byName, nhc.Name)
		return true, nil
	}
	c.catchUps.byName[nhc.Name] = pending
	return false, nil
}

// olderThanTheCache tells whether a NodeHealthCheck, as the cache shows it,
// is older than the list the node cache started from: every node that
// existed when it was created is cached, at least as new as then, and no
// list is needed. At a start, that is every NodeHealthCheck but one
// created in the last moments. Without it, 10 NodeHealthChecks at 10,000
// nodes cost 29 lists of 110 MB and 2.4 s of start-up.
func (c *Controller) olderThanTheCache(nhc *v1alpha1.NodeHealthCheck) bool {
	started := c.liveNodes.InitialListVersion()
	if started == "" {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(nhc.ResourceVersion, started)
	return err == nil && cmp <= 0
}

// cacheShows tells whether the node cache holds a node at least as new as
// a resourceVersion.
func (c *Controller) cacheShows(name, version string) bool {
	current, err := c.nodeLister.CurrentVersion(name)
	if err != nil {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(current, version)
	// An opaque resourceVersion cannot be compared: the node is there.
	return err != nil || order >= 0
}

func (u *catchUps) forget(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.byName, name)
}
