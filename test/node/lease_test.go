package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// electionLease is the controller's leader-election Lease.
const electionLease = "nhc-controller.remediation.medik8s.io"

// leaseRecord is one state of the election Lease, as a watch delivered it.
type leaseRecord struct {
	holder          string
	acquire, renew  time.Time
	durationSeconds int32
}

// leaseHistory records every state of the election Lease.
type leaseHistory struct {
	mu      sync.Mutex
	records []leaseRecord
}

// watchLease records the election Lease's states until ctx ends. An
// informer delivers every update the API server's watch sends, and lists
// again after a broken watch.
func watchLease(ctx context.Context, kube kubernetes.Interface) *leaseHistory {
	h := &leaseHistory{}
	lw := cache.NewListWatchFromClient(kube.CoordinationV1().RESTClient(), "leases", framework.InstallNamespace,
		fields.OneTermEqualSelector("metadata.name", electionLease))
	informer := cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
	record := func(obj any) {
		lease, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return
		}
		r := leaseRecord{}
		if lease.Spec.HolderIdentity != nil {
			r.holder = *lease.Spec.HolderIdentity
		}
		if lease.Spec.AcquireTime != nil {
			r.acquire = lease.Spec.AcquireTime.Time
		}
		if lease.Spec.RenewTime != nil {
			r.renew = lease.Spec.RenewTime.Time
		}
		if lease.Spec.LeaseDurationSeconds != nil {
			r.durationSeconds = *lease.Spec.LeaseDurationSeconds
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if n := len(h.records); n > 0 && h.records[n-1] == r {
			return
		}
		h.records = append(h.records, r)
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	})
	go informer.RunWithContext(ctx)
	return h
}

// holder is the Lease's holder as last seen.
func (h *leaseHistory) holder() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) == 0 {
		return ""
	}
	return h.records[len(h.records)-1].holder
}

// handover is one change of leader: from a holder to the next, through a
// release or an expired lease.
type handover struct {
	from, to string
	released bool
	// gap is from the release (or the last renewal, when the lease
	// expired) to the next holder's acquisition.
	gap time.Duration
	// leaseDuration is the old holder's lease duration.
	leaseDuration time.Duration
}

func (h handover) String() string {
	how := "released"
	if !h.released {
		how = "expired"
	}
	return fmt.Sprintf("%s -> %s (%s, %v without a leader)", podOf(h.from), podOf(h.to), how, h.gap.Round(time.Millisecond))
}

// podOf is the pod of a holder identity: the controller's identity is its
// hostname, the pod's name, and a random suffix.
func podOf(identity string) string {
	pod, _, _ := strings.Cut(identity, "_")
	return pod
}

// handovers reads the changes of leader off the recorded states. A
// release writes an empty holder with the time of the release.
func (h *leaseHistory) handovers() []handover {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []handover
	var last leaseRecord // the last state with a holder
	var release *leaseRecord
	for i := range h.records {
		r := h.records[i]
		switch {
		case r.holder == "":
			release = &h.records[i]
		case last.holder != "" && r.holder != last.holder:
			o := handover{from: last.holder, to: r.holder, leaseDuration: time.Duration(last.durationSeconds) * time.Second}
			if release != nil {
				o.released, o.gap = true, r.acquire.Sub(release.renew)
			} else {
				o.gap = r.acquire.Sub(last.renew)
			}
			out = append(out, o)
			release = nil
		default:
			release = nil
		}
		if r.holder != "" {
			last = r
		}
	}
	return out
}
