package check

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The lease invariant: our node lease is renewed only while a step runs,
// or is about to start, on its node.

type runKey struct{ nhc, node string }

// runs are the spans in which a NodeHealthCheck ran a step on a node.
type runs struct {
	spans [][2]time.Time
	// open is the span running since the last check, with its end.
	open *[2]time.Time
}

// leaseWrite is a renewal of a lease of ours, judged once leaseLag passed.
type leaseWrite struct {
	key runKey
	at  time.Time
	// lag is how late the controller may have seen the cluster then.
	lag time.Duration
}

// leaseWritten records a renewal of one of our node leases.
func (c *Checker) leaseWritten(obj, old *unstructured.Unstructured) {
	node, lease := leaseOf(obj)
	nhc, ours := health.LeaseHolderNHC(lease.Holder)
	if !ours || old == nil {
		return
	}
	if _, before := leaseOf(old); before.Holder != lease.Holder || before.Renewed.Equal(lease.Renewed) || lease.Acquired.Equal(lease.Renewed) {
		// Taken, or taken anew: a create follows, which the other
		// invariants judge.
		return
	}
	lag := c.watchLag()
	if lag < 0 {
		return
	}
	c.leaseWrites = append(c.leaseWrites, leaseWrite{key: runKey{nhc: nhc, node: node}, at: time.Now(), lag: lag})
}

// leaseServed dates a renewal by its request's arrival: a write that a
// partition parked lands later, but was the controller's act when sent,
// beside the confirmation of its create.
func (c *Checker) leaseServed(call *apiserver.Call) {
	if call.GVR != cluster.Leases || len(c.leaseWrites) == 0 {
		return
	}
	node, _ := health.LeaseNode(nameOf(call), "")
	if w := &c.leaseWrites[len(c.leaseWrites)-1]; w.key.node == node && w.at.Equal(time.Now()) {
		w.at = call.Arrived
	}
}

// InvLeaseUnderRemediation: a deleted NodeHealthCheck's node lease is not
// released while a remediation resource of it is on the node: it still
// remediates the node, and the lease keeps the others off it
// (docs/remediation.md, "Node leases": release).
const InvLeaseUnderRemediation = "lease-kept-under-a-remediation"

// leaseDeleted checks the deletion of one of our node leases.
func (c *Checker) leaseDeleted(obj *unstructured.Unstructured) {
	node, lease := leaseOf(obj)
	name, ours := health.LeaseHolderNHC(lease.Holder)
	if !ours || node == "" || c.nhcAt(name, time.Now()) != nil {
		return
	}
	if life := c.resourceOn(node, time.Now(), func(r remediationObj) bool { return r.ownerName == name }); life != nil {
		c.fail(InvLeaseUnderRemediation, "node lease of %s released while %s of deleted NodeHealthCheck %s is on the node", node, describe(life.obj), name)
	}
}

// watchLag is how late the controller may see the cluster now; negative
// when a watch is stalled and it cannot know, and for leaseLag after a
// stalled watch ended: until the reflector has watched again and its
// informer has handed on what the stall held back (a NodeHealthCheck
// deleted meanwhile), a sync may still act on the world from before.
func (c *Checker) watchLag() time.Duration {
	lag := leaseLag
	watches := c.server.Watches()
	if watches.Stalled {
		return -1
	}
	if time.Now().Before(watches.StallEnded.Add(leaseLag)) {
		return -1
	}
	// A watch that ended (a fault, a stall, its timeout): until its client
	// watches again (after its back-off, and any outage), and leaseLag
	// after, it may act on the world from before: renew the lease of a
	// node that recovered during an outage.
	if watches.Rewatching || time.Now().Before(watches.Rewatched.Add(leaseLag)) {
		return -1
	}
	if now := time.Now(); now.Before(watches.DelayUntil.Add(leaseLag)) {
		// What changed since the delay began (or since a watch that
		// resumed during it went blind) is not delivered yet, or was
		// delivered a moment ago: a renewal at the very instant a delay
		// ended may come before the deletion it held back is handled.
		lag += min(now.Sub(watches.DelayFrom), watches.DelayUntil.Sub(watches.DelayFrom))
	}
	return lag
}

// stepRuns tells whether a NodeHealthCheck runs a step on a node now: the
// node is selected, not excluded, and unhealthy, and it has a resource
// that has not timed out, whose step is within its timeout (or, without
// one, its lease is not overdue: three lease durations from the later of
// the lease's acquisition and the step's start). It returns when the
// step's time ends.
func (c *Checker) stepRuns(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node, all []remediationObj) (bool, time.Time) {
	now := time.Now()
	if nhc.DeletionTimestamp != nil || !selects(nhc, node) || excluded(node) {
		return false, time.Time{}
	}
	if _, matching := conditionsHold(nhc, node, now); !matching {
		return false, time.Time{}
	}
	steps := nhc.Spec.RemediationSteps()
	for _, r := range all {
		if r.owner != nhc.UID || r.node != node.Name || r.obj.GetDeletionTimestamp() != nil || r.obj.GetAnnotations()[v1alpha1.TimedOutAnnotation] != "" {
			continue
		}
		i := slices.IndexFunc(steps, func(s v1alpha1.EscalatingRemediation) bool {
			return s.RemediationTemplate.Name == r.template && health.RemediationKind(s.RemediationTemplate.Kind) == r.obj.GetKind()
		})
		switch {
		case i < 0:
			return true, now.Add(24 * time.Hour)
		case steps[i].Timeout.Duration > 0:
			if end := r.obj.GetCreationTimestamp().Add(steps[i].Timeout.Duration); now.Before(end) {
				return true, end
			}
		default:
			// A step without a timeout runs three lease durations from
			// the later of its lease's acquisition and its own start.
			lease := c.leaseOn(node.Name)
			start := lease.Acquired
			if created := r.obj.GetCreationTimestamp().Time; created.After(start) {
				start = created
			}
			if end := start.Add(3 * c.cfg.NodeLeaseDuration); lease.Holder == health.LeaseHolder(nhc.Name) && now.Before(end) {
				return true, end
			}
		}
	}
	return false, time.Time{}
}

func (c *Checker) leaseOn(node string) health.NodeLease {
	obj := c.store.Peek(cluster.Leases, c.cfg.LeaseNamespace, health.LeaseName(node))
	if obj == nil {
		return health.NodeLease{}
	}
	return nodeLeaseOf(typedOf[coordinationv1.Lease](c, obj))
}

// trackRuns records, for every NodeHealthCheck and node, whether a step
// runs from now until the next check.
func (c *Checker) trackRuns(all []remediationObj) {
	now := time.Now()
	seen := map[runKey]bool{}
	nodes := c.allNodes()
	for _, nhc := range c.allNHCs() {
		for _, node := range nodes {
			runsNow, end := c.stepRuns(nhc, node, all)
			if !runsNow {
				continue
			}
			key := runKey{nhc: nhc.Name, node: node.Name}
			seen[key] = true
			r := c.running[key]
			if r == nil {
				r = &runs{}
				c.running[key] = r
			}
			if r.open == nil {
				r.open = &[2]time.Time{now, end}
			}
			r.open[1] = end
		}
	}
	for key, r := range c.running {
		if r.open != nil && !seen[key] {
			r.open[1] = minTime(r.open[1], now)
			r.spans = append(r.spans, *r.open)
			r.open = nil
		}
	}
	kept := c.leaseWrites[:0]
	for _, w := range c.leaseWrites {
		switch {
		case now.Before(w.at.Add(leaseLag)):
			kept = append(kept, w)
		case !c.ran(w.key, w.at.Add(-w.lag), w.at.Add(leaseLag)) && !c.triedToCreate(w.key, w.at.Add(-w.lag), w.at.Add(leaseLag)):
			c.fail(InvLeaseWhileActing, "NodeHealthCheck %s renewed the lease of node %s at %s, while no step of its ran on the node", w.key.nhc, w.key.node, w.at.Format("15:04:05"))
		}
	}
	c.leaseWrites = kept
}

// triedToCreate tells whether a NodeHealthCheck tried to create a
// resource for a node between from and to: the lease is taken or renewed
// for the step first, and the create may fail (429, 500) and be retried.
func (c *Checker) triedToCreate(key runKey, from, to time.Time) bool {
	within := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	return slices.ContainsFunc(c.createTries[key], within) || slices.ContainsFunc(c.createTries[runKey{nhc: key.nhc, node: anyNode}], within)
}

// ran tells whether a step ran at some instant between from and to.
func (c *Checker) ran(key runKey, from, to time.Time) bool {
	r := c.running[key]
	if r == nil {
		return false
	}
	spans := r.spans
	if r.open != nil {
		spans = append(slices.Clone(spans), [2]time.Time{r.open[0], minTime(r.open[1], time.Now())})
	}
	for _, s := range spans {
		if !s[1].Before(from) && !s[0].After(to) {
			return true
		}
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
