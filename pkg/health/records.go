package health

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// What a node's status entry records of its remediations, read beside its
// resources.

// hasResource tells whether a resource of that UID exists.
func hasResource(resources []Remediation, uid types.UID) bool {
	for i := range resources {
		if resources[i].Ref.UID == uid {
			return true
		}
	}
	return false
}

// timedOutAt returns when a resource was given up on, from the status entry
// or from its annotation, or nil.
func timedOutAt(r *Remediation, entry *v1alpha1.UnhealthyNode) *metav1.Time {
	if rem := entryRemediation(entry, r.Ref.UID); rem != nil && rem.TimedOut != nil {
		return rem.TimedOut
	}
	if !r.TimedOut.IsZero() {
		t := metav1.NewTime(r.TimedOut)
		return &t
	}
	return nil
}

func entryRemediation(entry *v1alpha1.UnhealthyNode, uid types.UID) *v1alpha1.Remediation {
	if entry == nil {
		return nil
	}
	for _, rem := range entry.Remediations {
		if rem != nil && rem.Resource.UID == uid {
			return rem
		}
	}
	return nil
}

// HoldsOnRecord tells whether a NodeHealthCheck's status entry for a node
// records an incident under way (a step that never timed out, no end
// marked since) that it can go on with (CannotAct). Its step's resource may
// be gone (its remediator deleted it): the step is created again on its
// first clock, so the NodeHealthCheck still remediates the node, and no
// other one that selects it takes it over (Remediator). One that cannot act
// holds a node only by resources that exist.
func HoldsOnRecord(nhc *v1alpha1.NodeHealthCheck, entry *v1alpha1.UnhealthyNode) bool {
	if entry == nil || endedAt(entry) != nil || CannotAct(nhc) != "" {
		return false
	}
	return slices.ContainsFunc(entry.Remediations, func(rem *v1alpha1.Remediation) bool { return rem != nil && rem.TimedOut == nil })
}

// NodesHeldOnRecord are the nodes a NodeHealthCheck holds by its status
// (HoldsOnRecord).
func NodesHeldOnRecord(nhc *v1alpha1.NodeHealthCheck) []string {
	var nodes []string
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && HoldsOnRecord(nhc, entry) {
			nodes = append(nodes, entry.Name)
		}
	}
	return nodes
}

// NodesRecordingRemediations are the nodes whose status entry records a
// remediation resource, whatever its state: while its kind cannot be read,
// such a record keeps the node busy for every other NodeHealthCheck.
func NodesRecordingRemediations(nhc *v1alpha1.NodeHealthCheck) []string {
	var nodes []string
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && slices.ContainsFunc(entry.Remediations, func(rem *v1alpha1.Remediation) bool { return rem != nil }) {
			nodes = append(nodes, entry.Name)
		}
	}
	return nodes
}
