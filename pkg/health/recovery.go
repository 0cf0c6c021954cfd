package health

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// recover handles a node that matches no unhealthy condition but still has
// remediation resources: they are deleted now, after healthyDelay, or never
// (negative healthyDelay) unless the node is manually confirmed healthy.
// Resources that are all being deleted already wait for nothing but their
// finalizers.
//
// A confirmation is consumed by the recovery it confirms: "Once the node
// meets all other healthy criteria, NHC will delete the ...
// manually-confirmed-healthy annotation from the Node, and proceed with
// deleting the remediation CR" (nodehealthcheck-resource.md, HealthyDelay).
// It is removed by the sync that deletes on it (after the deletes went
// through, so that a failed one is retried on the same confirmation), not
// once the resources are gone: a remediator's finalizer may hold them past
// a relapse, and a confirmation left on the node would release the next
// incident's remediation unconfirmed.
func (e *evaluation) recover(v *NodeVerdict, resources []Remediation) {
	start := v.incident.healthySince
	v.HealthySince = start

	reason := DeleteNodeHealthy
	if _, confirmed := v.Node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]; confirmed {
		reason = DeleteManuallyConfirmed
		e.p.RemoveConfirmation = append(e.p.RemoveConfirmation, v.Node.Name)
	} else if !slices.ContainsFunc(resources, func(r Remediation) bool { return !r.Deleting }) {
		return
	} else if delay := e.rules.healthyDelay; delay != 0 {
		// The annotation keeps the delay's start, a negative delay's too:
		// it tells a recovery after a deselection from a held one
		// (allLeftBehind).
		for i := range resources {
			if r := &resources[i]; !r.Deleting && delayStart(r, v.incident.record).IsZero() {
				e.p.StartHealthyDelay = append(e.p.StartHealthyDelay, HealthyDelayMark{Resource: r.Ref, Start: start})
			}
		}
		if ends := start.Add(delay); delay < 0 || e.now.Before(ends) {
			v.HealthyDelayed = true
			if delay > 0 {
				e.deadline(ends)
			}
			return
		}
	}
	for i := range resources {
		if r := &resources[i]; !r.Deleting {
			e.p.Delete = append(e.p.Delete, Deletion{Node: v.Node.Name, Resource: r.Ref, Reason: reason})
		}
	}
}

// clearHealthyDelay restarts the healthy delay of a node that relapsed: the
// next recovery counts from its own start (upstream keeps the old start).
func (e *evaluation) clearHealthyDelay(resources []Remediation) {
	for i := range resources {
		if r := &resources[i]; !r.HealthyDelayStart.IsZero() && !r.Deleting {
			e.p.ClearHealthyDelay = append(e.p.ClearHealthyDelay, r.Ref)
		}
	}
}

// evaluateOrphans deletes the resources of nodes that are gone or no longer
// selected, except those whose remediator expects to delete the node and has
// not yet succeeded.
func (e *evaluation) evaluateOrphans() {
	for node, resources := range e.in.Remediations {
		if !e.withResources[node] && len(resources) > 0 {
			e.p.Orphans = append(e.p.Orphans, node)
		}
	}
	slices.Sort(e.p.Orphans)
	for _, node := range e.p.Orphans {
		resources := e.in.Remediations[node]
		e.noteControlPlane(node, false, resources)
		if e.in.PendingNodes[node] {
			continue
		}
		e.flagOld(resources)
		for i := range resources {
			r := &resources[i]
			if r.Deleting || (r.PermanentNodeDeletionExpected && r.Succeeded != metav1.ConditionTrue) {
				continue
			}
			e.p.Delete = append(e.p.Delete, Deletion{Node: node, Resource: r.Ref, Reason: DeleteNodeGone})
		}
	}
}
