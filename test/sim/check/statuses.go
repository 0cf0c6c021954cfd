package check

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// Statuses that show the cluster, and the kinds a NodeHealthCheck reads.

// statuses checks that every NodeHealthCheck's status lists only resources
// that existed, and, once calm has lasted statusBound, every resource of
// its that has existed as long, unless one of its kinds could not be read
// within statusBound: its status then keeps what it recorded; or unless
// the status's bound compacted its record away (compactedAway), or left
// its entry out once a steps edit let incidents outgrow it (outgrown).
func (c *Checker) statuses(all []remediationObj) {
	now := time.Now()
	for _, nhc := range c.allNHCs() {
		listed := map[types.UID]bool{}
		for _, entry := range nhc.Status.UnhealthyNodes {
			for _, rem := range entryRemediations(entry) {
				listed[rem.Resource.UID] = true
				if owner, ok := c.created[rem.Resource.UID]; !ok || owner != nhc.UID {
					c.fail(InvStatusTruthful, "NodeHealthCheck %s's status lists %s %s of node %s, which it never had", nhc.Name, rem.Resource.Kind, rem.Resource.Name, entry.Name)
				}
			}
		}
		if c.calmSince.IsZero() || c.unreadableLately(nhc, now) {
			continue
		}
		for _, r := range all {
			if r.owner != nhc.UID || listed[r.obj.GetUID()] || !selectsNow(c, nhc, r.node) {
				continue
			}
			due := r.obj.GetCreationTimestamp().Add(statusBound)
			if calmDue := c.calmSince.Add(statusBound); calmDue.After(due) {
				due = calmDue
			}
			if now.Before(due) {
				c.recheckAt(due)
				continue
			}
			if !compactedAway(nhc, r) && !outgrown(c, nhc, r.node, all) {
				c.fail(InvStatusTruthful, "NodeHealthCheck %s's status does not list %s of node %s, created at %s", nhc.Name, describe(r.obj), r.node, r.obj.GetCreationTimestamp().Format("15:04:05"))
			}
		}
	}
}

// unreadableLately tells whether a kind a NodeHealthCheck reads
// (kindsRead) is forbidden, or was within statusBound: while one is, the
// controller cannot know its resources, and the status keeps its entries as
// they were (decisions.md).
func (c *Checker) unreadableLately(nhc *v1alpha1.NodeHealthCheck, now time.Time) bool {
	var graceEnds time.Time
	for _, k := range c.kindsRead(nhc) {
		if _, forbidden := c.forbiddenNodes[k]; forbidden {
			return true
		}
		if again := c.readableAgain[k].Add(statusBound); again.After(graceEnds) {
			graceEnds = again
		}
	}
	if now.Before(graceEnds) {
		c.recheckAt(graceEnds)
		return true
	}
	return false
}

// kindsRead are the kinds of a NodeHealthCheck's templates, of the
// resources its status lists, and of its creates that cannot be looked up
// (unlookable); every kind for a deleted one (nil).
func (c *Checker) kindsRead(nhc *v1alpha1.NodeHealthCheck) []cluster.Kind {
	if nhc == nil {
		return cluster.Kinds
	}
	var read []cluster.Kind
	for _, ref := range nhc.Spec.TemplateRefs() {
		read = append(read, cluster.KindOfTemplate(ref.Kind))
	}
	for _, entry := range nhc.Status.UnhealthyNodes {
		for _, rem := range entryRemediations(entry) {
			read = append(read, cluster.KindOfRemediation(rem.Resource.Kind))
		}
	}
	for _, k := range cluster.Kinds {
		if sentBy(c.unlookable(k), nhc) {
			read = append(read, k)
		}
	}
	return read
}

// kindsReadOver are the kinds the versions of a NodeHealthCheck (its UID)
// read from one instant to another, its version now's included: whether
// it could act then depends on those it read then.
func (c *Checker) kindsReadOver(nhc *v1alpha1.NodeHealthCheck, from, to time.Time) []cluster.Kind {
	kinds := c.kindsRead(nhc)
	c.eachNHCVersion(nhc.Name, from, to, func(_ time.Time, then *v1alpha1.NodeHealthCheck) bool {
		if then != nil && then.UID == nhc.UID {
			kinds = append(kinds, c.kindsRead(then)...)
		}
		return true
	})
	return kinds
}

// sentBy tells whether one of the creates is a NodeHealthCheck's.
func sentBy(creates []remediationObj, nhc *v1alpha1.NodeHealthCheck) bool {
	return slices.ContainsFunc(creates, func(r remediationObj) bool { return r.ownerName == nhc.Name })
}

func selectsNow(c *Checker, nhc *v1alpha1.NodeHealthCheck, name string) bool {
	node := c.nodeAt(name, time.Now())
	return node != nil && selects(nhc, node)
}

func entryRemediations(entry *v1alpha1.UnhealthyNode) []*v1alpha1.Remediation {
	if entry == nil {
		return nil
	}
	var rems []*v1alpha1.Remediation
	for _, rem := range entry.Remediations {
		if rem != nil {
			rems = append(rems, rem)
		}
	}
	return rems
}
