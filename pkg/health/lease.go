package health

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What this NodeHealthCheck does with node leases (nodelease.go): which
// lease a create takes, when a step's lease is overdue, and which leases
// it renews, releases or lets lapse.

// foreignLease returns the lease of a node that someone other than this
// NodeHealthCheck holds now, or nil.
func (e *evaluation) foreignLease(node string) *NodeLease {
	if e.in.Leases == nil {
		return nil
	}
	l, ok := e.in.Leases.ByNode[node]
	if !ok || l.Holder == e.holder() || !l.HeldAt(e.now) {
		return nil
	}
	return &l
}

// ownLease returns the lease of a node that this NodeHealthCheck holds, in
// force or not, or nil.
func (e *evaluation) ownLease(node string) *NodeLease {
	if e.in.Leases == nil {
		return nil
	}
	l, ok := e.in.Leases.ByNode[node]
	if !ok || l.Holder != e.holder() {
		return nil
	}
	return &l
}

func (e *evaluation) holder() string {
	return LeaseHolder(e.in.NHC.Name)
}

// stepLeaseDuration is how long a step's resource holds the node's lease,
// before the buffer: its escalation timeout, or the configured duration.
func (e *evaluation) stepLeaseDuration(stepIndex int) time.Duration {
	if stepIndex >= 0 && stepIndex < len(e.rules.steps) && e.rules.steps[stepIndex].timeout > 0 {
		return e.rules.steps[stepIndex].timeout
	}
	return e.in.Leases.Duration
}

// leaseRequest is the lease a new resource of a step needs, or nil without leases.
func (e *evaluation) leaseRequest(v *NodeVerdict, stepIndex int, restart bool) *LeaseRequest {
	if e.in.Leases == nil {
		return nil
	}
	return &LeaseRequest{
		Node: v.Node.Name, NodeUID: v.Node.UID, Holder: e.holder(),
		Duration: e.stepLeaseDuration(stepIndex) + e.in.Leases.Buffer, Restart: restart,
	}
}

// leaseOverdue is when this NodeHealthCheck's lease of a node becomes
// overdue for the running step: after three of the step's durations, plus
// the timeouts of the steps before it (upstream's rule), counted from when
// the lease was taken; never sooner than three of its durations after the
// step itself started (overdueFrom). Zero when it holds no lease of the
// node: a lease that went overdue is not taken again for the same step.
func (e *evaluation) leaseOverdue(node string, inc *incident) time.Time {
	l := e.ownLease(node)
	if l == nil {
		return time.Time{}
	}
	acquired := l.Acquired
	if acquired.IsZero() {
		acquired = l.Renewed
	}
	return e.overdueFrom(acquired, inc.stepStarted(), inc.currentStep)
}

// overdueFrom is when a lease taken at leaseStart is overdue for a step
// that started at stepStart: three of the step's durations plus the
// timeouts of the steps before it, from the lease's start; or three of its
// durations from the step's own start, if later. "The timeout field
// determines when the next remediation is invoked" counts from the step's
// own invocation: a step created long after the one before it timed out
// (a refusal, a pause, the budget, a storm held it) gets its whole time,
// where upstream's rule alone would time it out at once.
func (e *evaluation) overdueFrom(leaseStart, stepStart time.Time, step int) time.Time {
	var previous time.Duration
	for i := 0; i < step && i < len(e.rules.steps); i++ {
		previous += e.rules.steps[i].timeout
	}
	start := leaseStart.Add(previous)
	if stepStart.After(start) {
		start = stepStart
	}
	return start.Add(leaseOverdueFactor * e.stepLeaseDuration(step))
}

// resumedLeaseOverdue is when the lease rule ends the step that runs next
// after its resource went (incident.resumed): the lease may be released or
// taken anew since, so the time is counted from the incident's first start
// on record, which its lease was taken before, and from the step's own first
// start. A step that went overdue while its record's write failed and its
// remediator deleted its resource is not started a second time. Zero
// without leases or a start on record.
func (e *evaluation) resumedLeaseOverdue(inc *incident) time.Time {
	if e.in.Leases == nil || inc.resumed == nil {
		return time.Time{}
	}
	first := inc.firstStartOnRecord()
	if first.IsZero() {
		return time.Time{}
	}
	return e.overdueFrom(first, inc.resumed.Started.Time, inc.next)
}

// keepLeases renews this NodeHealthCheck's leases while it acts on their
// nodes, when half their duration has passed, and releases those of nodes
// that have none of its resources and get none, and are healthy or no
// longer selected (upstream's rule), or are left to another NodeHealthCheck
// by the overlap rule: that one takes the lease before it remediates, and
// would otherwise wait for ours to end. An unhealthy node that waits for
// this NodeHealthCheck keeps its lease until it ends, so that another
// process of the same NodeHealthCheck, whose cache does not show its
// resource yet, cannot release a lease taken a moment ago. A node whose
// resources stay while it no longer acts (every step timed out, the node
// excluded, the running step past its timeout) is no longer renewed: the
// lease lapses, and node-maintenance-operator may take the node. A lease it
// does not hold is left alone: not taken again after it went overdue, and
// never released. A lease taken by this plan's create is renewed at half its
// duration, as any other.
func (e *evaluation) keepLeases() {
	if e.in.Leases == nil {
		return
	}
	planned := map[string]bool{}
	for _, c := range e.p.Create {
		planned[c.Node] = true
		if c.Lease != nil {
			e.deadline(e.now.Add(c.Lease.Duration / 2))
		}
	}
	for _, node := range e.p.ReleaseLeases {
		planned[node] = true
	}
	verdicts := map[string]*NodeVerdict{}
	for i := range e.p.Nodes {
		if v := &e.p.Nodes[i]; v.State != StateHealthy {
			verdicts[v.Node.Name] = v
		}
	}
	// The leases this NodeHealthCheck holds, of all there are, in the
	// nodes' order, so that the warnings are too.
	var held []string
	holder := e.holder()
	for node, l := range e.in.Leases.ByNode {
		if l.Holder == holder && !planned[node] && !e.in.PendingNodes[node] {
			held = append(held, node)
		}
	}
	slices.Sort(held)
	for _, node := range held {
		l := e.in.Leases.ByNode[node]
		if len(e.in.Remediations[node]) == 0 {
			if v := verdicts[node]; v == nil || v.RemediatedBy != nil {
				e.p.ReleaseLeases = append(e.p.ReleaseLeases, node)
			}
			continue
		}
		if why := e.leaseLapses(verdicts[node]); why != "" {
			// A node whose next step's create is retried takes its lease
			// again at each try: it does not lapse meanwhile.
			retried := verdicts[node] != nil && verdicts[node].Waiting == WaitCreateFailed
			if l.HeldAt(e.now) && why != lapseDeleting && !retried {
				e.p.Warnings = append(e.p.Warnings, normal(ReasonLeaseLapsing, node, fmt.Sprintf(messageLeaseLapsing, node, why, l.Expires().UTC().Format(time.RFC3339))))
			}
			continue
		}
		renewAt := l.Renewed.Add(l.Duration / 2)
		if e.now.Before(renewAt) {
			e.deadline(renewAt)
			continue
		}
		e.p.RenewLeases = append(e.p.RenewLeases, LeaseRequest{Node: node, Holder: l.Holder, Duration: l.Duration})
		e.deadline(e.now.Add(l.Duration / 2))
	}
	slices.Sort(e.p.ReleaseLeases)
	slices.SortFunc(e.p.RenewLeases, func(a, b LeaseRequest) int { return strings.Compare(a.Node, b.Node) })
}

// Why a lease of a node with this NodeHealthCheck's resources is no longer
// renewed: no step of it runs within its time on the node.
const (
	lapseExhausted    = "escalation exhausted"
	lapseExcluded     = "node excluded"
	lapseTimedOut     = "remediation step timed out"
	lapseFailed       = "remediation step failed"
	lapseOverdue      = "node lease overdue"
	lapseHealthyDelay = "node healthy, its remediation waits for healthyDelay or a manual confirmation"
	lapseNotSelected  = "node no longer selected"
	lapseRelapsed     = "node unhealthy again while the remediation its recovery ended is being deleted"
	// lapseDeleting: the node is healthy and its resources are being
	// deleted, the ordinary end of a remediation; the lease is released
	// once they are gone, and no event says more.
	lapseDeleting = "node healthy, its remediation being deleted"
)

// leaseLapses says why this NodeHealthCheck no longer renews the lease of a
// node with its resources, or "" while a step runs on it within its time: the
// node is selected, not excluded, still unhealthy, not out of steps, and its
// running step neither timed out nor failed nor, for a step without timeout
// (remediationTemplate), past its lease's overdue time. Whatever holds back
// the time-out (a pause, the budget) does not keep the lease: nothing runs
// on the node that another operator, such as node-maintenance-operator, must
// wait for.
func (e *evaluation) leaseLapses(v *NodeVerdict) string {
	switch {
	case v == nil:
		return lapseNotSelected
	case v.Excluded:
		return lapseExcluded
	case v.State == StateRecovering && v.HealthyDelayed:
		return lapseHealthyDelay
	case v.State == StateRecovering:
		return lapseDeleting
	case v.Waiting == WaitNoTemplate:
		return lapseExhausted
	}
	p := v.incident
	switch {
	case p == nil:
		return lapseTimedOut
	case p.state != incidentRunning && p.endedAt != nil:
		return lapseRelapsed
	case p.state != incidentRunning:
		return lapseTimedOut
	case p.currentStep < 0:
		// A step the spec no longer has runs until the node is healthy.
		return ""
	}
	switch end := p.end(e.rules.steps, e.leaseOverdue(v.Node.Name, p)); {
	case end.failed:
		return lapseFailed
	case end.at.IsZero() || e.now.Before(end.at):
		return ""
	case end.overdue:
		return lapseOverdue
	}
	return lapseTimedOut
}
