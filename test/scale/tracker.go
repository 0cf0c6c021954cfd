package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// resourceEvent is a remediation resource created or deleted, as the
// benchmark's watch saw it.
type resourceEvent struct {
	node, nhc string
	deleted   bool
	// seen is when the watch delivered it.
	seen time.Time
	// version is the resource's resourceVersion: for a deletion, the
	// revision that deleted it (0 when the watch missed it).
	version uint64
}

// tracker watches the remediation resources, as a remediator would, and
// keeps what the phases measure: every creation and deletion, and, as they
// happen, duplicates (a second live resource for a node) and budget
// violations (more live resources for a NodeHealthCheck than its minHealthy
// allows at once).
type tracker struct {
	mu sync.Mutex
	// allowed is how many resources each NodeHealthCheck may have at once.
	allowed    map[string]int
	liveByNode map[string]int
	liveByNHC  map[string]int
	events     []resourceEvent
	duplicates int
	violations int
	// changed is closed and replaced at every event, to wake waiters.
	changed chan struct{}
}

func newTracker(allowed map[string]int) *tracker {
	return &tracker{allowed: allowed, liveByNode: map[string]int{}, liveByNHC: map[string]int{}, changed: make(chan struct{})}
}

// run watches the remediation resources until ctx ends and returns once
// the initial list is in.
func (t *tracker) run(ctx context.Context, client dynamic.Interface) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, framework.RemediatorNamespace, nil)
	informer := factory.ForResource(framework.RemediationResource).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { t.record(obj, false) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			t.record(obj, true)
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("the remediation resources' watch did not sync")
	}
	return nil
}

func (t *tracker) record(obj any, deleted bool) {
	r, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	e := resourceEvent{node: resource.TargetNode(r), deleted: deleted, seen: time.Now()}
	if owners := resource.OwnerNames(r); len(owners) > 0 {
		e.nhc = owners[0]
	}
	e.version, _ = strconv.ParseUint(r.GetResourceVersion(), 10, 64)
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted {
		t.liveByNode[e.node]--
		t.liveByNHC[e.nhc]--
	} else {
		t.liveByNode[e.node]++
		t.liveByNHC[e.nhc]++
		if t.liveByNode[e.node] > 1 {
			t.duplicates++
		}
		if t.liveByNHC[e.nhc] > t.allowed[e.nhc] {
			t.violations++
		}
	}
	t.events = append(t.events, e)
	close(t.changed)
	t.changed = make(chan struct{})
}

// reset starts a phase: it forgets the events and counts so far, not the
// live resources.
func (t *tracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events, t.duplicates, t.violations = nil, 0, 0
}

// phase returns the events and counts since the last reset.
func (t *tracker) phase() (events []resourceEvent, duplicates, violations int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]resourceEvent(nil), t.events...), t.duplicates, t.violations
}

// live is how many resources a node has now.
func (t *tracker) live(node string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.liveByNode[node]
}

// total is how many resources exist now.
func (t *tracker) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, live := range t.liveByNHC {
		n += live
	}
	return n
}

// waitUntil waits until condition holds, checking it at every event, for at
// most timeout.
func (t *tracker) waitUntil(ctx context.Context, timeout time.Duration, condition func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		changed := t.changed
		t.mu.Unlock()
		if condition() {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return condition()
		case <-ctx.Done():
			return false
		}
	}
}
