package health

// The gates: why a node that needs a new resource does not get one now,
// room in the status for its incident included; and the create of one
// that passes them.

import "time"

// resourceGate says why a node may not get any new resource now: neither a
// first remediation nor its next escalation step. A node that another
// NodeHealthCheck remediates gets neither.
func (e *evaluation) resourceGate(v *NodeVerdict) WaitReason {
	switch {
	case e.p.Problem != nil:
		return WaitDisabled
	case e.rules.paused():
		return WaitPaused
	case v.Excluded:
		return WaitExcluded
	case v.RemediatedBy != nil:
		return WaitOverlap
	}
	return WaitNone
}

// escalationGate says why a node under remediation may not move on now (time
// out its step, and start the next if there is one): what holds back any
// new resource, the budget and storm recovery
// (the spec: storm recovery blocks new remediations; the workflow: nothing
// is processed further while minHealthy fails), and a node lease that
// someone else holds. A resource being deleted
// cannot stand in the way: every resource, deleting or not, counts as a step
// used, so the next step is always another.
func (e *evaluation) escalationGate(v *NodeVerdict) WaitReason {
	if w := e.resourceGate(v); w != WaitNone {
		return w
	}
	switch {
	case !e.p.Budget.Allowed:
		return WaitMinHealthy
	case e.p.Storm.Active:
		return WaitStorm
	}
	if l := e.foreignLease(v.Node.Name); l != nil {
		// Someone else acts on the node: wait until its lease ends.
		v.Lease = l
		e.deadline(l.Expires())
		return WaitLeaseHeld
	}
	return WaitNone
}

// createGate says why a node may not get a resource created now, first or
// next step: what holds back an escalation, the retry of its last create
// that failed, and the one-control-plane-node rule (controlplane.go), last,
// since passing it takes the plan's control-plane slot. Quorum does not
// care which step a node is at (upstream checks the rule before every
// create).
func (e *evaluation) createGate(v *NodeVerdict) WaitReason {
	if w := e.escalationGate(v); w != WaitNone {
		return w
	}
	if w := e.retryGate(v); w != WaitNone {
		return w
	}
	return e.controlPlaneGate(v)
}

// A node whose create failed or was refused is retried FirstCreateRetry
// later, then at doubling intervals up to MaxCreateRetry while it fails
// (Input.CreateRetries): a refusal that lasts costs a create every 15 s. A
// create whose fate is unknown is looked up on the same back-off.
const (
	FirstCreateRetry = time.Second
	MaxCreateRetry   = 15 * time.Second
)

// retryGate holds a node whose last create failed or was refused until its
// retry (Input.CreateRetries), so that the others go first.
func (e *evaluation) retryGate(v *NodeVerdict) WaitReason {
	retry, failed := e.in.CreateRetries[v.Node.Name]
	if !failed || !e.now.Before(retry) {
		return WaitNone
	}
	e.deadline(retry)
	return WaitCreateFailed
}

// deferToNextPlan holds a node's new resource for the next plan when this one created
// as many as Input.MaxCreations allows, or Input.CreatesHeld holds them all.
func (e *evaluation) deferToNextPlan(v *NodeVerdict) bool {
	switch {
	case e.in.CreatesHeld:
		v.Waiting = WaitStatusWrite
	case e.in.MaxCreations <= 0 || len(e.p.Create) < e.in.MaxCreations:
		return false
	default:
		v.Waiting = WaitNextBatch
	}
	e.p.Deferred++
	return true
}

// create plans a resource, with the node lease it needs, unless this plan
// created as many as it may. A first resource takes the lease anew, so that
// an old lease of ours does not make the new remediation overdue.
func (e *evaluation) create(v *NodeVerdict, stepIndex int, escalation, restartLease bool) {
	if e.deferToNextPlan(v) {
		return
	}
	s := e.rules.steps[stepIndex]
	e.p.Create = append(e.p.Create, Creation{
		Node: v.Node.Name, Template: s.template, Step: stepIndex, Timeout: s.timeout,
		ControlPlane: v.ControlPlane, Escalation: escalation, Lease: e.leaseRequest(v, stepIndex, restartLease || v.Remediations == 0),
		FirstResource: v.Remediations == 0,
	})
}

// remembers tells whether the status can hold one more node's incident,
// and counts it: the compacted entries of every node under remediation
// must fit memoryFactor times the status's bytes, or the bound would leave
// some out and cost them their steps' clocks. An incident is counted at
// the most its entry can grow to: a compact record of each of the spec's
// steps.
func (e *evaluation) remembers(node string) bool {
	if e.remembered < 0 {
		e.remembered = e.incidentBytes()
	}
	add := entryBytes(node) + max(1, len(e.rules.steps))*e.rules.largestRecord()
	if e.remembered+add > memoryFactor*e.in.statusBytes() {
		return false
	}
	e.remembered += add
	return true
}

// incidentBytes estimates the most the compacted entries of the nodes
// under remediation can grow to: their resources' records, and one of the
// spec's largest step for each step to come or the last that timed out
// and is gone; and the records of listed nodes whose incidents go on
// though their resources are gone. An ended incident's record is not
// counted: the status this plan writes drops it, and a node waiting for
// room (StatusFull) would wait for an end that already came.
func (e *evaluation) incidentBytes() int {
	size := 0
	for node, resources := range e.in.Remediations {
		if len(resources) == 0 {
			continue
		}
		size += entryBytes(node) + max(1, len(e.rules.steps)-len(resources))*e.rules.largestRecord()
		for i := range resources {
			r := &resources[i]
			size += recordBytes(&r.Ref, r.TemplateName) - len(r.Ref.Name)
		}
	}
	for i := range e.p.Nodes {
		v := &e.p.Nodes[i]
		if !v.Listed || v.incident == nil || v.incident.record == nil || len(e.in.Remediations[v.Node.Name]) > 0 {
			continue
		}
		if entry := v.incident.record; len(entry.Remediations) > 0 {
			size += entrySize(entry, false) + max(0, len(e.rules.steps)-len(entry.Remediations))*e.rules.largestRecord()
		}
	}
	return size
}
