package health

// The gates: why a node that needs a new resource does not get one now.

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
// next step: what holds back an escalation, and the one-control-plane-node
// rule (controlplane.go). Quorum does not care which step a node is at
// (upstream checks the rule before every create).
func (e *evaluation) createGate(v *NodeVerdict) WaitReason {
	if w := e.escalationGate(v); w != WaitNone {
		return w
	}
	return e.controlPlaneGate(v)
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
