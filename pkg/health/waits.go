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

var (
	waitSummaryOrder = []WaitReason{WaitStorm, WaitControlPlane, WaitLeaseHeld, WaitStatusFull, WaitCreateFailed, WaitExcluded, WaitDeletion, WaitNoTemplate}
	waitSummaries    = map[WaitReason]string{
		WaitStorm:        "for storm recovery to end",
		WaitControlPlane: "for another control-plane node's remediation",
		WaitLeaseHeld:    "for their node lease, which someone else holds (node maintenance or another remediation)",
		WaitStatusFull:   "for a remediation to end: the status remembers no more at once",
		WaitCreateFailed: "for a retry of their remediation's create, which failed or was refused",
		WaitExcluded:     "excluded from remediation",
		WaitDeletion:     "for their remediation's deletion",
		WaitNoTemplate:   "with no remediation template left to try",
	}
)

// LastingEvents are the events of states that last: why nodes wait, the
// warnings, and creations that someone else's resource blocks. They are keyed,
// so that the controller records each once while it lasts.
func (p *Plan) LastingEvents(out *Outcome) map[string]Event {
	events := map[string]Event{}
	for i := range p.Nodes {
		v := &p.Nodes[i]
		switch v.Waiting {
		case WaitMinHealthy:
			events["minHealthy"] = warning(EventRemediationSkipped, "", fmt.Sprintf(messageWaitMinHealthy, p.Healthy, p.Budget.MinHealthy))
		case WaitStorm:
			events["storm"] = warning(EventRemediationSkipped, "", messageWaitStorm)
		case WaitPaused:
			events["paused"] = normal(EventRemediationSkipped, "", messageWaitPaused)
		case WaitExcluded:
			events["excluded/"+v.Node.Name] = warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitExcluded, v.Node.Name))
		case WaitControlPlane:
			events["controlPlane/"+v.Node.Name] = warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitControlPlane, v.Node.Name))
		case WaitControlPlaneUnknown:
			events["controlPlaneUnknown/"+v.Node.Name] = warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitControlPlaneUnknown, v.Node.Name, p.ControlPlaneUnknown))
		case WaitLeaseHeld:
			events["lease/"+v.Node.Name] = warning(EventRemediationSkipped, v.Node.Name, fmt.Sprintf(messageWaitLeaseHeld, v.Node.Name))
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
		if w := p.Nodes[i].Waiting; w != WaitNone && w != WaitPaused && w != WaitDisabled && w != WaitOwnWrite && w != WaitNextBatch && w != WaitStatusWrite {
			counts[w]++
			waiting++
		}
	}
	if waiting == 0 {
		return ""
	}
	var parts []string
	if n := counts[WaitMinHealthy]; n > 0 {
		parts = append(parts, fmt.Sprintf(summaryMinHealthy, n, p.Healthy, p.Observed, p.Budget.MinHealthy))
	}
	if n := counts[WaitOverlap]; n > 0 {
		parts = append(parts, p.overlapSummary(n))
	}
	for _, reason := range waitSummaryOrder {
		if n := counts[reason]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, waitSummaries[reason]))
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
	switch v.Waiting {
	case WaitMinHealthy:
		return fmt.Sprintf(becauseMinHealthy, p.Healthy, p.Observed, p.Budget.MinHealthy)
	case WaitStorm:
		return becauseStorm
	case WaitPaused:
		return fmt.Sprintf(becausePaused, strings.Join(p.rules.pauseRequests, ", "))
	case WaitExcluded:
		return becauseExcluded
	case WaitControlPlane:
		return becauseControlPlane
	case WaitControlPlaneUnknown:
		return fmt.Sprintf(becauseControlPlaneUnknown, p.ControlPlaneUnknown)
	case WaitDisabled:
		if p.Problem != nil {
			return fmt.Sprintf(becauseDisabled, p.Problem.Reason, p.Problem.Message)
		}
	case WaitDeletion:
		return becauseDeletion
	case WaitNoTemplate:
		return becauseNoTemplate
	case WaitOwnWrite:
		return becauseOwnWrite
	case WaitNextBatch:
		return becauseNextBatch
	case WaitStatusWrite:
		return becauseStatusWrite
	case WaitStatusFull:
		return fmt.Sprintf(becauseStatusFull, p.Remediating)
	case WaitCreateFailed:
		return fmt.Sprintf(becauseCreateFailed, MaxCreateRetry)
	case WaitOverlap:
		if v.RemediatedBy != nil {
			return p.becauseOverlap(v.RemediatedBy, v.State == StateUnhealthy || v.State == StateSoonUnhealthy)
		}
	case WaitLeaseHeld:
		if v.Lease != nil {
			return fmt.Sprintf(becauseLeaseHeld, LeaseName(v.Node.Name), v.Lease.Holder, v.Lease.Expires().UTC().Format(time.RFC3339))
		}
	}
	return ""
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
