package health

import (
	"fmt"
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// checkInvariants returns what a decision breaks of the rules that must
// always hold, whatever the input.
func checkInvariants(in Input, d result) []string {
	var broken []string
	fail := func(format string, args ...any) { broken = append(broken, fmt.Sprintf(format, args...)) }

	verdicts := verdictsByNode(d)
	if !d.NextDeadline.IsZero() && !d.NextDeadline.After(in.Now) {
		fail("next deadline %v is not after now %v", d.NextDeadline, in.Now)
	}
	checkCreations(in, d, verdicts, fail)
	checkDeletions(in, d, verdicts, fail)
	checkTimeOuts(d, verdicts, fail)
	checkCounters(in, d, fail)
	checkStatusEntries(d, fail)
	checkHistory(in, d, fail)
	checkLeases(in, d, fail)
	return broken
}

// verdictsByNode are a decision's verdicts by node name.
func verdictsByNode(d result) map[string]NodeVerdict {
	verdicts := map[string]NodeVerdict{}
	for _, v := range d.Nodes {
		verdicts[v.Node.Name] = v
	}
	return verdicts
}

// checkCreations: one creation per node at most, each allowed (see
// checkCreation); a first remediation only for a node without resources and
// within the budget; and at most one control-plane remediation starting,
// none while another is running (see checkControlPlaneStart).
func checkCreations(in Input, d result, verdicts map[string]NodeVerdict, fail func(string, ...any)) {
	newRemediations, controlPlaneStarts := 0, 0
	created := map[string]bool{}
	for _, c := range d.Create {
		if created[c.Node] {
			fail("two creations for node %s", c.Node)
		}
		created[c.Node] = true
		checkCreation(in, d, c, verdicts, fail)
		if c.Escalation {
			continue
		}
		newRemediations++
		if len(in.Remediations[c.Node]) > 0 {
			fail("a first remediation for %s, which has resources", c.Node)
		}
		if c.ControlPlane {
			controlPlaneStarts++
		}
	}
	if newRemediations > 0 && !d.Budget.Allowed {
		fail("%d new remediations although only %d of %d nodes are healthy and %d must be", newRemediations, d.Healthy, d.Observed, d.Budget.MinHealthy)
	}
	checkControlPlaneStart(in, verdicts, created, controlPlaneStarts, fail)
}

// checkCreation checks what any creation, first or escalation, needs: a
// selected unhealthy node that is not excluded, no pause, no pending write,
// no problem, no lease of another holder, a lease request exactly when
// leases are given, and no other NodeHealthCheck remediating the node.
func checkCreation(in Input, d result, c Creation, verdicts map[string]NodeVerdict, fail func(string, ...any)) {
	v, selected := verdicts[c.Node]
	switch {
	case !selected:
		fail("creation for unselected node %s", c.Node)
	case v.State != StateUnhealthy:
		fail("creation for node %s in state %s", c.Node, v.State)
	case v.Excluded:
		fail("creation for excluded node %s", c.Node)
	}
	if len(in.NHC.Spec.PauseRequests) > 0 {
		fail("creation for %s while paused", c.Node)
	}
	if in.PendingNodes[c.Node] {
		fail("creation for %s, whose last write is not visible yet", c.Node)
	}
	if in.RemediationProblem != nil || d.Problem != nil {
		fail("creation for %s while disabled", c.Node)
	}
	if l := leaseOf(in, c.Node); l != nil && l.Holder != LeaseHolder(in.NHC.Name) && l.HeldAt(in.Now) {
		fail("creation for %s, whose lease %s holds", c.Node, l.Holder)
	}
	if (in.Leases == nil) != (c.Lease == nil) {
		fail("creation for %s with lease request %v, leases given: %v", c.Node, c.Lease, in.Leases != nil)
	}
	if by, self := in.RemediatorOf(c.Node); !self {
		fail("creation for %s, which %s remediates", c.Node, by.Name)
	}
}

// checkControlPlaneStart: at most one control-plane remediation starts, and
// only while no node has a control-plane remediation, ours or another
// owner's, but the nodes it creates for.
func checkControlPlaneStart(in Input, verdicts map[string]NodeVerdict, created map[string]bool, controlPlaneStarts int, fail func(string, ...any)) {
	if controlPlaneStarts > 1 {
		fail("%d control-plane remediations start at once", controlPlaneStarts)
	}
	if controlPlaneStarts == 1 {
		for node, resources := range in.Remediations {
			if anyControlPlane(resources) || (verdicts[node].ControlPlane && len(resources) > 0) {
				fail("a control-plane remediation starts while %s has one", node)
			}
		}
		for node := range in.BusyControlPlaneNodes {
			if !created[node] {
				fail("a control-plane remediation starts while %s has another owner's", node)
			}
		}
	}
}

// checkDeletions: only known resources not being deleted yet are deleted,
// never of a node with a pending write, and of a selected node only while
// it recovers.
func checkDeletions(in Input, d result, verdicts map[string]NodeVerdict, fail func(string, ...any)) {
	exists := map[string]Remediation{}
	for _, resources := range in.Remediations {
		for _, r := range resources {
			exists[string(r.Ref.UID)] = r
		}
	}
	for _, del := range d.Delete {
		r, ok := exists[string(del.Resource.UID)]
		if !ok {
			fail("deletion of unknown resource %s", del.Resource.Name)
			continue
		}
		if r.Deleting {
			fail("deletion of %s, already being deleted", del.Resource.Name)
		}
		if in.PendingNodes[del.Node] {
			fail("deletion of %s of node %s, whose last write is not visible yet", del.Resource.Name, del.Node)
		}
		if v, selected := verdicts[del.Node]; selected && v.State != StateRecovering {
			fail("deletion of %s of node %s in state %s", del.Resource.Name, del.Node, v.State)
		}
	}
}

// checkTimeOuts: only an unhealthy node's remediation times out.
func checkTimeOuts(d result, verdicts map[string]NodeVerdict, fail func(string, ...any)) {
	for _, to := range d.TimeOut {
		if v := verdicts[to.Node]; v.State != StateUnhealthy {
			fail("time-out for node %s in state %s", to.Node, v.State)
		}
	}
}

// checkCounters: no healthy node has resources, and the healthy and
// observed counters agree with the verdicts and the input.
func checkCounters(in Input, d result, fail func(string, ...any)) {
	healthy := 0
	for _, v := range d.Nodes {
		if v.State == StateHealthy {
			healthy++
		}
		if v.State == StateHealthy && len(in.Remediations[v.Node.Name]) > 0 {
			fail("node %s is healthy with resources", v.Node.Name)
		}
	}
	if healthy != d.Healthy || int32(healthy) != *d.Status.HealthyNodes || int32(len(in.Nodes)) != *d.Status.ObservedNodes {
		fail("counters disagree: %d healthy verdicts, Healthy %d, status %d/%d", healthy, d.Healthy, *d.Status.HealthyNodes, *d.Status.ObservedNodes)
	}
}

// checkStatusEntries: the status's unhealthy nodes are sorted and unique,
// each resource listed once, and the status has a phase and a reason.
func checkStatusEntries(d result, fail func(string, ...any)) {
	for i := 1; i < len(d.Status.UnhealthyNodes); i++ {
		if d.Status.UnhealthyNodes[i-1].Name >= d.Status.UnhealthyNodes[i].Name {
			fail("status entries not sorted or duplicated at %s", d.Status.UnhealthyNodes[i].Name)
		}
	}
	listed := map[string]bool{}
	for _, entry := range d.Status.UnhealthyNodes {
		for _, rem := range entry.Remediations {
			if listed[string(rem.Resource.UID)] {
				fail("resource %s listed twice", rem.Resource.Name)
			}
			listed[string(rem.Resource.UID)] = true
		}
	}
	if d.Status.Phase == "" || d.Status.Reason == "" {
		fail("no phase or reason")
	}
}

// leaseOf is a node's lease in the input, or nil.
func leaseOf(in Input, node string) *NodeLease {
	if in.Leases == nil {
		return nil
	}
	if l, ok := in.Leases.ByNode[node]; ok {
		return &l
	}
	return nil
}

// checkLeases: a lease is renewed or released only when it is ours, released
// only without resources or creations, and never both.
func checkLeases(in Input, d result, fail func(string, ...any)) {
	created := map[string]bool{}
	for _, c := range d.Create {
		created[c.Node] = true
	}
	renewed := map[string]bool{}
	for _, r := range d.RenewLeases {
		renewed[r.Node] = true
		if l := leaseOf(in, r.Node); l == nil || l.Holder != LeaseHolder(in.NHC.Name) {
			fail("renewal of %s's lease, which is not ours", r.Node)
		}
	}
	for _, node := range d.ReleaseLeases {
		if l := leaseOf(in, node); l == nil || l.Holder != LeaseHolder(in.NHC.Name) {
			fail("release of %s's lease, which is not ours", node)
		}
		if renewed[node] || created[node] || in.PendingNodes[node] {
			fail("release of %s's lease, which is renewed, taken or pending", node)
		}
		overdue := false
		for _, to := range d.TimeOut {
			overdue = overdue || (to.Node == node && to.LeaseOverdue)
		}
		if len(in.Remediations[node]) > 0 && !overdue {
			fail("release of %s's lease while it has resources", node)
		}
	}
}

// checkHistory checks the remediation history: one open record per node
// at most, one for every node with resources, times in order, newest first.
func checkHistory(in Input, d result, fail func(string, ...any)) {
	h := d.Status.RemediationHistory
	open := map[string]bool{}
	for i := range h {
		r := &h[i]
		if r.Finished == nil {
			if open[r.TargetName] {
				fail("two open history records for node %s", r.TargetName)
			}
			open[r.TargetName] = true
		} else if r.Finished.Before(&r.Started) {
			fail("history record of %s finished before it started", r.TargetName)
		}
		if r.Started.Before(&r.Detected) {
			fail("history record of %s started before it was detected", r.TargetName)
		}
		if i > 0 && h[i-1].Started.Before(&r.Started) {
			fail("history not newest first at %s", r.TargetName)
		}
	}
	if len(h) < v1alpha1.MaxRemediationHistory {
		for node, resources := range in.Remediations {
			// A deselected node's incident ended with its deselection.
			deselected := slices.Contains(d.Orphans, node) && !in.DeletedNodes[node]
			if len(resources) > 0 && !open[node] && !in.PendingNodes[node] && !deselected {
				fail("node %s has resources and no open history record", node)
			}
		}
	}
}
