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
	messageCreated           = "Created remediation object for node %s"
	messageRemoved           = "Deleted remediation CR of kind %s with name %s"
	messageTimedOut          = "Remediation %s %s of node %s timed out: %s"
	messageTimeoutPassed     = "its timeout passed"
	messageRemediatorFailed  = "its remediator reported Succeeded=False"
	messageLeaseOverdue      = "its node lease is overdue"
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

// ReasonLeaseLapsing and messageLeaseLapsing (node, why, when) say that a
// node's lease is no longer renewed, as no step of this NodeHealthCheck runs
// on the node within its time, and when it lapses. The lease is not
// released (deleted) while the node has resources: it ends by itself.
const (
	ReasonLeaseLapsing  = "NodeLeaseLapsing"
	messageLeaseLapsing = "Node lease of %s no longer renewed: %s; it lapses at %s, so that node maintenance may take the node"
)
