package health

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// Event is an event to record on the NodeHealthCheck.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type    string
	Reason  string
	Message string
	// Node is the node the event is about, if any.
	Node string
}

// Event reasons. They are upstream's, but for RemediationTimedOut, so that
// existing alerts and dashboards keep working.
const (
	EventEnabled             = "Enabled"
	EventDisabled            = "Disabled"
	EventDetectedUnhealthy   = "DetectedUnhealthy"
	EventInvalidNodeLabel    = "InvalidNodeLabel"
	EventNoTemplateLeft      = "NoTemplateLeft"
	EventStormStarted        = "StormRecoveryStarted"
	EventStormCooldown       = "StormRecoveryCooldownStarted"
	EventStormEnded          = "StormRecoveryEnded"
	EventRemediationCreated  = "RemediationCreated"
	EventRemediationRemoved  = "RemediationRemoved"
	EventRemediationSkipped  = "RemediationSkipped"
	EventRemediationTimedOut = "RemediationTimedOut"
	// EventNodesOverlap: other NodeHealthChecks started to select some of
	// the same nodes; upstream has no such event.
	EventNodesOverlap = "NodesOverlap"
)

// Event messages, with upstream's wording where upstream has the event.
const (
	messageEnabled           = "No issues found, NodeHealthCheck is enabled."
	messageDisabled          = "Disabling NHC. Reason: %s, Message: %s"
	messageDetectedUnhealthy = "Node matches unhealthy condition. Node %q, condition type %q, condition status %q"
	messageInvalidNodeLabel  = "Node %s has exclude-from-remediation label with empty value, label will be ignored. Set value to 'true' to exclude node from remediation"
	messageNoTemplateLeft    = "Remediation timed out, and no template left to try. didn't find a template to use for NHC %s and node %s"
	messageStormStarted      = "Storm recovery mode activated - delaying remediation until threshold is reached"
	messageStormCooldown     = "Storm recovery mode will exit after cooldown delay"
	messageStormEnded        = "Storm recovery mode deactivated - normal remediation resumed"
	messageCreated           = "Created remediation object for node %s"
	messageRemoved           = "Deleted remediation CR of kind %s with name %s"
	messageTimedOut          = "Remediation %s %s of node %s timed out: %s"
	messageTimeoutPassed     = "its timeout passed"
	messageRemediatorFailed  = "its remediator reported Succeeded=False"
	messageLeaseOverdue      = "its node lease is overdue"
	messageBlocked           = "Skipped remediation: %s"

	messageWaitMinHealthy   = "Skipped remediation because the number of healthy nodes selected by the selector is %d and should equal or exceed %d"
	messageWaitStorm        = "Storm recovery active: skipping creation of new remediations"
	messageWaitPaused       = "Postponing potential remediations because of pause requests"
	messageWaitExcluded     = "Remediation skipped on node %s: node has Exclude from Remediation label"
	messageWaitControlPlane = "Skipping remediation of %s for preventing control plane / etcd quorum loss, going to retry in a minute"
	messageWaitLeaseHeld    = "Skipped remediation of node: %s, because node lease is already taken"
)

// How the status reason counts the nodes that wait, next to the events that
// say why they wait.
const summaryMinHealthy = "%d because " + becauseMinHealthy

var (
	waitSummaryOrder = []WaitReason{WaitStorm, WaitControlPlane, WaitLeaseHeld, WaitStatusFull, WaitExcluded, WaitDeletion, WaitNoTemplate}
	waitSummaries    = map[WaitReason]string{
		WaitStorm:        "for storm recovery to end",
		WaitControlPlane: "for another control-plane node's remediation",
		WaitLeaseHeld:    "for their node lease, which someone else holds (node maintenance or another remediation)",
		WaitStatusFull:   "for a remediation to end: the status remembers no more at once",
		WaitExcluded:     "excluded from remediation",
		WaitDeletion:     "for their remediation's deletion",
		WaitNoTemplate:   "with no remediation template left to try",
	}
)

// eventMessageLimit keeps event messages within the 1024 bytes the API
// server accepts, with room for the controller's "[remediation] " prefix.
const eventMessageLimit = 1000

func normal(reason, node, message string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: truncate(message, eventMessageLimit), Node: node}
}

func warning(reason, node, message string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: truncate(message, eventMessageLimit), Node: node}
}

// truncate shortens s to at most limit bytes, on a character boundary, and
// says so with a trailing "...". Messages carry names and errors of any
// length; the API server rejects what is longer than a field allows.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "..."
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

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

// Events are the events of what the outcome did: a time-out before the
// creation of the step that follows it.
func (o *Outcome) Events() []Event {
	var events []Event
	for _, to := range o.TimedOut {
		why := messageTimeoutPassed
		switch {
		case to.Failed:
			why = messageRemediatorFailed
		case to.LeaseOverdue:
			why = messageLeaseOverdue
		}
		events = append(events, warning(EventRemediationTimedOut, to.Node, fmt.Sprintf(messageTimedOut, to.Resource.Kind, to.Resource.Name, to.Node, why)))
	}
	for _, c := range o.Created {
		events = append(events, normal(EventRemediationCreated, c.Node, fmt.Sprintf(messageCreated, c.Node)))
	}
	for _, del := range o.Deleted {
		events = append(events, normal(EventRemediationRemoved, del.Node, fmt.Sprintf(messageRemoved, del.Resource.Kind, del.Resource.Name)))
	}
	for _, u := range o.Unconfirmed {
		events = append(events, normal(ReasonRemediationNotConfirmed, u.Node, fmt.Sprintf(messageNotConfirmed, u.Node, u.Message)))
	}
	return events
}

// ReasonRemediationNotConfirmed and messageNotConfirmed (node, why) say
// that a node's remediation resource (a first one or an escalation step) was
// not created: the API server showed the node no longer needs it, while the
// node cache still did.
const (
	ReasonRemediationNotConfirmed = "RemediationNotConfirmed"
	messageNotConfirmed           = "Remediation of node %s not started: at the API server, %s; the controller's node cache had not caught up"
)

// messageWaitControlPlaneUnknown (node, why) is WaitControlPlaneUnknown's
// event.
const messageWaitControlPlaneUnknown = "Skipping remediation of %s for preventing control plane / etcd quorum loss: not every control-plane remediation is known yet (%s)"

// ReasonLeaseLapsing and messageLeaseLapsing (node, why, when) say that a
// node's lease is no longer renewed, as no step of this NodeHealthCheck runs
// on the node within its time, and when it lapses. The lease is not
// released (deleted) while the node has resources: it ends by itself.
const (
	ReasonLeaseLapsing  = "NodeLeaseLapsing"
	messageLeaseLapsing = "Node lease of %s no longer renewed: %s; it lapses at %s, so that node maintenance may take the node"
)
