package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// Why a node waits, in the three grammars that say it: the events that
// last while it waits (LastingEvents), the status reason, which counts the
// nodes that wait (waitSummary), and kubectl nhc's words for one node
// (because). They stand side by side so that they say the same.

// Why a node waits, in words, for kubectl nhc.
const (
	becauseMinHealthy   = "only %d of %d nodes are healthy and %d must be"
	becauseStorm        = "storm recovery holds back new remediations"
	becausePaused       = "the NodeHealthCheck is paused: %s"
	becauseExcluded     = "the node has the label " + v1alpha1.ExcludeFromRemediationLabel + "=true"
	becauseControlPlane = "another control-plane node is under remediation, and only one at a time may be"
	// becauseControlPlaneUnknown (why) is Input.ControlPlaneUnknown's wait.
	becauseControlPlaneUnknown = "only one control-plane node at a time may be under remediation, and not all of those under remediation are known yet: %s"
	becauseDisabled            = "the NodeHealthCheck is disabled: %s: %s"
	becauseDeletion            = "its previous remediation resource is still being deleted"
	becauseNoTemplate          = "every remediation step timed out or failed, and none is left to try"
	becauseOwnWrite            = "the controller's last write for this node is not visible yet"
	becauseNextBatch           = "the controller creates remediations in batches, and this one is in the next"
	becauseStatusWrite         = "the remediations created so far are not in the stored status yet, which the remediation guard reads; the next one waits for that status write"
	becauseStatusFull          = "the status remembers the remediations of %d nodes, as many as it can hold, and a new one starts when one of them ends"
	becauseLeaseHeld           = "its node lease %s is held by %s until %s (node maintenance or another remediation); it is remediated when the lease is released or expires"
	becauseCreateFailed        = "its last remediation create failed or was refused (the controller's log, or a RemediationSkipped event, says why); it is tried again within %s, the other nodes first"
)

const (
	becauseOverlapOlder       = "NodeHealthCheck %s selects it too and remediates it, being older; make the selectors disjoint"
	becauseOverlapFirstByName = "NodeHealthCheck %s selects it too and remediates it: both were created in the same second, and its name comes first; make the selectors disjoint"
	becauseOverlapRemediating = "NodeHealthCheck %s is remediating it (remediation resources, or a step under way in its status), and this one leaves it alone until that ends; make the selectors disjoint"
	becauseOverlapConditions  = "NodeHealthCheck %s selects it too and remediates it: its unhealthy conditions hold on the node, and this one's do not; make the selectors disjoint"
	// becauseOverlapCannotAct (other, why this one cannot act).
	becauseOverlapCannotAct = "NodeHealthCheck %s selects it too and remediates it: this one cannot act (%s), and it can; make the selectors disjoint"
)

// The events of a wait, with upstream's wording where upstream has the event.
const (
	messageWaitMinHealthy   = "Skipped remediation because the number of healthy nodes selected by the selector is %d and should equal or exceed %d"
	messageWaitStorm        = "Storm recovery active: skipping creation of new remediations"
	messageWaitPaused       = "Postponing potential remediations because of pause requests"
	messageWaitExcluded     = "Remediation skipped on node %s: node has Exclude from Remediation label"
	messageWaitControlPlane = "Skipping remediation of %s for preventing control plane / etcd quorum loss, going to retry in a minute"
	messageWaitLeaseHeld    = "Skipped remediation of node: %s, because node lease is already taken"
	messageBlocked          = "Skipped remediation: %s"
)

// messageWaitControlPlaneUnknown (node, why) is WaitControlPlaneUnknown's
// event.
const messageWaitControlPlaneUnknown = "Skipping remediation of %s for preventing control plane / etcd quorum loss: not every control-plane remediation is known yet (%s)"

// How the status reason counts the nodes that wait, next to the events that
// say why they wait.
const (
	reasonWaiting     = "%d unhealthy nodes wait: %s"
	summaryMinHealthy = "%d because " + becauseMinHealthy
	summaryOverlap    = "%d left to the NodeHealthChecks that remediate them (%s)"
)

// What frees an excluded node, for kubectl nhc.
const remedyExcluded = "to allow it: kubectl label node %s " + v1alpha1.ExcludeFromRemediationLabel + "-"

// wait is everything said of one reason to wait, and how the controller
// waits for it. Every use iterates waits: a new gate is its rule in
// gates.go and its row here.
type wait struct {
	reason WaitReason
	// because says why a node waits, for kubectl nhc; "" when what it
	// needs to say is not known.
	because func(p *Plan, v *NodeVerdict) string
	// event is the event that lasts while a node waits, under its key:
	// one for the NodeHealthCheck, or one a node. Nil: no event.
	event func(p *Plan, v *NodeVerdict) (string, Event)
	// summary counts n nodes that wait in the status reason, in waits'
	// order. Nil: the reason does not count them (a wait that passes within
	// a sync or two, or one a condition states).
	summary func(p *Plan, n int) string
	// endedByEvent: a change the controller watches ends the wait (a
	// deletion, a write shown, another NodeHealthCheck's status); a sync
	// WaitRetry later ends it if none comes.
	endedByEvent bool
	// remedy says what an operator may do to end the wait, for kubectl
	// nhc; nil: nothing but waiting.
	remedy func(v *NodeVerdict) string
}

// says is a constant because.
func says(words string) func(*Plan, *NodeVerdict) string {
	return func(*Plan, *NodeVerdict) string { return words }
}

// counted is a summary of n nodes that wait for words.
func counted(words string) func(*Plan, int) string {
	return func(_ *Plan, n int) string { return fmt.Sprintf("%d %s", n, words) }
}

// waits are the reasons to wait, in the order the status reason counts
// them.
var waits = []wait{
	{reason: WaitMinHealthy,
		because: func(p *Plan, _ *NodeVerdict) string {
			return fmt.Sprintf(becauseMinHealthy, p.Healthy, p.Observed, p.Budget.MinHealthy)
		},
		event: func(p *Plan, _ *NodeVerdict) (string, Event) {
			return "minHealthy", warning(EventRemediationSkipped, "", fmt.Sprintf(messageWaitMinHealthy, p.Healthy, p.Budget.MinHealthy))
		},
		summary: func(p *Plan, n int) string {
			return fmt.Sprintf(summaryMinHealthy, n, p.Healthy, p.Observed, p.Budget.MinHealthy)
		}},
	{reason: WaitOverlap, endedByEvent: true,
		because: func(p *Plan, v *NodeVerdict) string {
			if v.RemediatedBy == nil {
				return ""
			}
			return p.becauseOverlap(v.RemediatedBy, v.State == StateUnhealthy || v.State == StateSoonUnhealthy)
		},
		summary: (*Plan).overlapSummary},
	{reason: WaitStorm, because: says(becauseStorm),
		event: func(*Plan, *NodeVerdict) (string, Event) {
			return "storm", warning(EventRemediationSkipped, "", messageWaitStorm)
		},
		summary: counted("for storm recovery to end")},
	{reason: WaitControlPlane, because: says(becauseControlPlane), endedByEvent: true,
		event: func(_ *Plan, v *NodeVerdict) (string, Event) {
			return "controlPlane/" + v.Node.Name, warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitControlPlane, v.Node.Name))
		},
		summary: counted("for another control-plane node's remediation")},
	{reason: WaitControlPlaneUnknown, endedByEvent: true,
		because: func(p *Plan, _ *NodeVerdict) string {
			return fmt.Sprintf(becauseControlPlaneUnknown, p.ControlPlaneUnknown)
		},
		event: func(p *Plan, v *NodeVerdict) (string, Event) {
			return "controlPlaneUnknown/" + v.Node.Name, warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitControlPlaneUnknown, v.Node.Name, p.ControlPlaneUnknown))
		},
		summary: counted("until every control-plane node's remediation is known")},
	{reason: WaitLeaseHeld,
		because: func(_ *Plan, v *NodeVerdict) string {
			if v.Lease == nil {
				return ""
			}
			return fmt.Sprintf(becauseLeaseHeld, LeaseName(v.Node.Name), v.Lease.Holder, v.Lease.Expires().UTC().Format(time.RFC3339))
		},
		event: func(_ *Plan, v *NodeVerdict) (string, Event) {
			return "lease/" + v.Node.Name, warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitLeaseHeld, v.Node.Name))
		},
		summary: counted("for their node lease, which someone else holds (node maintenance or another remediation)")},
	{reason: WaitStatusFull,
		because: func(p *Plan, _ *NodeVerdict) string { return fmt.Sprintf(becauseStatusFull, p.Remediating) },
		summary: counted("for a remediation to end: the status remembers no more at once")},
	{reason: WaitCreateFailed, because: says(fmt.Sprintf(becauseCreateFailed, MaxCreateRetry)),
		summary: counted("for a retry of their remediation's create, which failed or was refused")},
	{reason: WaitExcluded, because: says(becauseExcluded),
		event: func(_ *Plan, v *NodeVerdict) (string, Event) {
			return "excluded/" + v.Node.Name, warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitExcluded, v.Node.Name))
		},
		summary: counted("excluded from remediation"),
		remedy:  func(v *NodeVerdict) string { return fmt.Sprintf(remedyExcluded, v.Node.Name) }},
	{reason: WaitDeletion, because: says(becauseDeletion), endedByEvent: true,
		summary: counted("for their remediation's deletion")},
	{reason: WaitNoTemplate, because: says(becauseNoTemplate),
		summary: counted("with no remediation template left to try")},
	{reason: WaitPaused,
		because: func(p *Plan, _ *NodeVerdict) string {
			return fmt.Sprintf(becausePaused, strings.Join(p.rules.pauseRequests, ", "))
		},
		event: func(*Plan, *NodeVerdict) (string, Event) {
			return "paused", normal(EventRemediationSkipped, "", messageWaitPaused)
		}},
	{reason: WaitDisabled,
		because: func(p *Plan, _ *NodeVerdict) string {
			if p.Problem == nil {
				return ""
			}
			return fmt.Sprintf(becauseDisabled, p.Problem.Reason, p.Problem.Message)
		}},
	{reason: WaitOwnWrite, because: says(becauseOwnWrite), endedByEvent: true},
	{reason: WaitNextBatch, because: says(becauseNextBatch)},
	{reason: WaitStatusWrite, because: says(becauseStatusWrite)},
}

// waitOf is each reason's row.
var waitOf = func() map[WaitReason]*wait {
	rows := make(map[WaitReason]*wait, len(waits))
	for i := range waits {
		rows[waits[i].reason] = &waits[i]
	}
	return rows
}()

// LastingEvents are the events of states that last: why nodes wait, the
// warnings, and creations that someone else's resource blocks. They are keyed,
// so that the controller records each once while it lasts.
func (p *Plan) LastingEvents(out *Outcome) map[string]Event {
	events := map[string]Event{}
	for i := range p.Nodes {
		v := &p.Nodes[i]
		if w := waitOf[v.Waiting]; w != nil && w.event != nil {
			key, event := w.event(p, v)
			events[key] = event
		}
	}
	for _, w := range p.Warnings {
		events["warning/"+w.Reason+"/"+w.Node] = w
	}
	for _, b := range out.Blocked {
		events["blocked/"+b.Node+"/"+b.Message] = warning(EventRemediationSkipped, b.Node, fmt.Sprintf(messageBlocked, b.Message))
	}
	return events
}

// waitSummary explains why unhealthy nodes wait for a remediation.
func (p *Plan) waitSummary() string {
	counts := map[WaitReason]int{}
	waiting := 0
	for i := range p.Nodes {
		if w := waitOf[p.Nodes[i].Waiting]; w != nil && w.summary != nil {
			counts[w.reason]++
			waiting++
		}
	}
	if waiting == 0 {
		return ""
	}
	var parts []string
	for i := range waits {
		if n := counts[waits[i].reason]; n > 0 {
			parts = append(parts, waits[i].summary(p, n))
		}
	}
	return fmt.Sprintf(reasonWaiting, waiting, strings.Join(parts, ", "))
}

// overlapSummary counts, for the status reason, the nodes left to the
// NodeHealthChecks that remediate them.
func (p *Plan) overlapSummary(n int) string {
	names := map[string]bool{}
	for i := range p.Nodes {
		if v := &p.Nodes[i]; v.Waiting == WaitOverlap && v.RemediatedBy != nil {
			names[v.RemediatedBy.Name] = true
		}
	}
	return fmt.Sprintf(summaryOverlap, n, bounded(slices.Sorted(maps.Keys(names))))
}

// because says why a node waits.
func (p *Plan) because(v *NodeVerdict) string {
	if w := waitOf[v.Waiting]; w != nil {
		return w.because(p, v)
	}
	return ""
}

// remedy says what an operator may do to end a node's wait, "" for
// nothing but waiting.
func remedy(v *NodeVerdict) string {
	if w := waitOf[v.Waiting]; w != nil && w.remedy != nil {
		return w.remedy(v)
	}
	return ""
}

// endedByEvent says whether a change the controller watches ends a wait.
func endedByEvent(reason WaitReason) bool {
	w := waitOf[reason]
	return w != nil && w.endedByEvent
}

// becauseOverlap says why a node waits for another NodeHealthCheck, naming it.
func (p *Plan) becauseOverlap(by *Claim, selfHolds bool) string {
	switch {
	case by.Remediating:
		return fmt.Sprintf(becauseOverlapRemediating, by.Name)
	case by.CannotAct == "" && CannotAct(p.decidedFrom) != "":
		return fmt.Sprintf(becauseOverlapCannotAct, by.Name, CannotAct(p.decidedFrom))
	case by.ConditionsHold && !selfHolds:
		return fmt.Sprintf(becauseOverlapConditions, by.Name)
	case by.Created.Equal(p.decidedFrom.CreationTimestamp.Time):
		return fmt.Sprintf(becauseOverlapFirstByName, by.Name)
	}
	return fmt.Sprintf(becauseOverlapOlder, by.Name)
}
