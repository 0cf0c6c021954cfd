package health

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// What a node's status entry records of its remediations, read beside its
// resources.

// apiTime is a time as the API server stores it in a status: in whole
// seconds (RFC 3339). Every time a status records is made here, so that
// the status a write sends is the one stored, to the second: the
// controller keeps what it sent as the stored object (the answer holds
// its metadata alone), and a restart reads the same.
func apiTime(t time.Time) metav1.Time {
	return metav1.NewTime(t.Truncate(time.Second))
}

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
		t := apiTime(r.TimedOut)
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
