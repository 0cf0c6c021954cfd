package health

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Outcome is what carrying out a plan did, action by action. Status records
// only what it shows, so the status never claims what did not happen.
type Outcome struct {
	// Created are the creations that succeeded.
	Created []Created
	// TimedOut are the time-outs carried out: annotated, or needing no
	// annotation.
	TimedOut []TimeOut
	// Deleted are the deletions the API server accepted.
	Deleted []Deletion
	// DeletedGone counts those of Deleted whose resource the API server's
	// answer showed gone at once, held by no finalizer.
	DeletedGone int
	// Flagged are the resources newly flagged as older than 48 hours.
	Flagged []corev1.ObjectReference
	// Blocked are creations that something outside the plan stands in the way
	// of, such as someone else's resource of the same name: retrying does not
	// help until it goes.
	Blocked []Blocked
	// Withdrawn are creations not sent, because the caches just before the
	// create no longer showed the need (Plan.Recheck): the next plan decides
	// again.
	Withdrawn []Blocked
	// Unconfirmed are creations (a first remediation or an escalation step)
	// not sent, because the node, read at the API server just before, no
	// longer needed it, though the cache did: the node cache lagged behind.
	Unconfirmed []Blocked
	// Errors are the actions that failed and are worth a retry; the others
	// went ahead.
	Errors []error
}

// Created is a remediation resource that was created.
type Created struct {
	Creation
	// Resource references the created resource, with its UID.
	Resource corev1.ObjectReference
	// CreationTime is the resource's creationTimestamp.
	CreationTime time.Time
}

// newlyRemediating counts the nodes whose first resource was created.
func newlyRemediating(out *Outcome) int {
	n := 0
	for i := range out.Created {
		if out.Created[i].FirstResource {
			n++
		}
	}
	return n
}

// Blocked is a creation that did not happen, and why.
type Blocked struct {
	Node    string
	Message string
}
