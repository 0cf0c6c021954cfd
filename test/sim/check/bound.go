package check

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// What the status's bound changes, and how the checker tells
// (docs/decisions.md, "The status is bounded, and the bound never costs an
// incident its memory"). The entries of nodes under remediation come
// first; when they do not fit in full they are listed compactly: no
// resource names, and of the timed-out steps only the last one, the
// resources showing the rest. No entry of a node under remediation is ever
// left out: a new incident starts only when the status can remember it
// beside those under way, else the node waits with StatusFull until one
// ends. What is compacted changes no decision.

// compacted tells whether an entry is listed compactly: its records name
// no resource.
func compacted(entry *v1alpha1.UnhealthyNode) bool {
	rems := entryRemediations(entry)
	return len(rems) > 0 && !slices.ContainsFunc(rems, func(rem *v1alpha1.Remediation) bool { return rem.Resource.Name != "" })
}

// listedEntry is a node's entry in a status, or nil.
func listedEntry(nhc *v1alpha1.NodeHealthCheck, node string) *v1alpha1.UnhealthyNode {
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && entry.Name == node {
			return entry
		}
	}
	return nil
}

// compactedAway tells whether a compacted entry may leave out the record
// of a resource: one that shows itself timed out (the annotation), when
// the entry records a later step timed out (a step the spec no longer has
// is earlier than every step it has).
func compactedAway(nhc *v1alpha1.NodeHealthCheck, r remediationObj) bool {
	entry := listedEntry(nhc, r.node)
	if !compacted(entry) || !timedOutOn(r.obj) {
		return false
	}
	steps := nhc.Spec.RemediationSteps()
	i := stepIndex(steps, r.obj.GetKind(), r.template)
	return slices.ContainsFunc(entryRemediations(entry), func(rem *v1alpha1.Remediation) bool {
		return rem.TimedOut != nil && stepIndex(steps, rem.Resource.Kind, rem.TemplateName) > i
	})
}

// outgrown tells whether a small bound (Config.StatusBytes) may leave a
// node's entry out whole: a resource of the NodeHealthCheck is of a step
// its spec no longer has (its steps edited during an incident, which the
// remediation guard refuses unless overridden), so an incident carries
// records beyond the compact record of each of the spec's steps that its
// room was counted at, and the entries under way may no longer fit twice
// the bound.
func outgrown(c *Checker, nhc *v1alpha1.NodeHealthCheck, node string, all []remediationObj) bool {
	if c.cfg.StatusBytes <= 0 || listedEntry(nhc, node) != nil {
		return false
	}
	steps := nhc.Spec.RemediationSteps()
	return slices.ContainsFunc(all, func(r remediationObj) bool {
		return r.owner == nhc.UID && stepIndex(steps, r.obj.GetKind(), r.template) < 0
	})
}

// timedOutOn tells whether a remediation resource carries the timed-out
// annotation.
func timedOutOn(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[v1alpha1.TimedOutAnnotation]
	return ok
}

// statusFullReason is how a status's reason says that nodes wait for an
// incident under way to end (the StatusFull wait).
const statusFullReason = "the status remembers no more at once"

// statusFull tells whether a node's first remediation by a NodeHealthCheck
// may wait for room in its status: the world's bound is small
// (Config.StatusBytes; the default holds thousands of incidents), the
// status says nodes wait so, and another node's incident is under way, a
// resource of it or a record in its status: one ending makes room. The
// world's bound holds at least one incident.
func (c *Checker) statusFull(nhc *v1alpha1.NodeHealthCheck, node string) bool {
	if c.cfg.StatusBytes <= 0 || !strings.Contains(nhc.Status.Reason, statusFullReason) {
		return false
	}
	now := time.Now()
	for _, l := range c.lives {
		if l.owner == nhc.UID && l.node != node && !l.created.After(now) && (l.deleted.IsZero() || l.deleted.After(now)) {
			return true
		}
	}
	return slices.ContainsFunc(nhc.Status.UnhealthyNodes, func(entry *v1alpha1.UnhealthyNode) bool {
		return entry != nil && entry.Name != node && len(entryRemediations(entry)) > 0
	})
}
