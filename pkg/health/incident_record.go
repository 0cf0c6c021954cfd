package health

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The record an incident leaves in its node's status entry (incident.go):
// the steps' first starts and time-outs, kept across a lost status write,
// a resource deleted and created again, and the status bound.

// superseded finds the resources of steps before the running one that
// neither the last status nor an annotation shows as timed out (a lost
// status write of a Succeeded=True step, which has no annotation): they were
// given up when the running step started.
func superseded(steps []step, inc *incident, resources []Remediation) map[types.UID]time.Time {
	if inc.currentStep < 0 {
		return nil
	}
	var found map[types.UID]time.Time
	for i := range resources {
		r := &resources[i]
		if r.Ref.UID != inc.current.Ref.UID && timedOutAt(r, inc.record) == nil && stepOf(steps, &r.Ref, r.TemplateName) < inc.currentStep {
			if found == nil {
				found = map[types.UID]time.Time{}
			}
			found[r.Ref.UID] = inc.current.Created
		}
	}
	return found
}

// recordOf is the record a node's incident leaves in its status entry: its
// resources, each with its step's first start, and the steps that timed out
// and whose resources are gone since. A resource is timed out as the last
// record or its annotation says, else as a later step shows (superseded),
// else if it was just timed out. A step whose resource is gone keeps its
// record, and with it its first start, until its resource is created
// again (resumeSteps) or it times out; not once its incident ended.
func recordOf(node string, resources []Remediation, previous *v1alpha1.UnhealthyNode, superseded, timedOut map[types.UID]time.Time) *v1alpha1.UnhealthyNode {
	entry := &v1alpha1.UnhealthyNode{Name: node}
	for i := range resources {
		r := &resources[i]
		rem := &v1alpha1.Remediation{Resource: r.Ref, Started: apiTime(r.Created), TimedOut: timedOutAt(r, previous).DeepCopy(), TemplateName: r.TemplateName}
		if recorded := entryRemediation(previous, r.Ref.UID); recorded != nil && recorded.Started.Before(&rem.Started) {
			rem.Started = recorded.Started
		}
		if at, ok := superseded[r.Ref.UID]; ok && rem.TimedOut == nil {
			rem.TimedOut = ptr.To(apiTime(at))
		} else if at, ok := timedOut[r.Ref.UID]; ok && rem.TimedOut == nil {
			rem.TimedOut = ptr.To(apiTime(at))
		}
		entry.Remediations = append(entry.Remediations, rem)
	}
	if previous == nil {
		return entry
	}
	for _, rem := range previous.Remediations {
		if rem == nil || hasResource(resources, rem.Resource.UID) || (rem.TimedOut == nil && endedAt(previous) != nil) {
			continue
		}
		rem = rem.DeepCopy()
		if at, ok := timedOut[rem.Resource.UID]; ok && rem.TimedOut == nil {
			rem.TimedOut = ptr.To(apiTime(at))
		}
		entry.Remediations = append(entry.Remediations, rem)
	}
	return entry
}

// resumeSteps folds the record of a running step whose resource was gone
// into the record of the resource created again for that step: one
// record, with the step's first start, so that its timeout counts from
// there.
func resumeSteps(steps []step, records []*v1alpha1.Remediation, exists func(types.UID) bool) []*v1alpha1.Remediation {
	running := map[int]*v1alpha1.Remediation{}
	for _, r := range records {
		if i := stepOf(steps, &r.Resource, r.TemplateName); i >= 0 && r.TimedOut == nil && exists(r.Resource.UID) {
			running[i] = r
		}
	}
	kept := make([]*v1alpha1.Remediation, 0, len(records))
	for _, r := range records {
		if again := running[stepOf(steps, &r.Resource, r.TemplateName)]; again != nil && r.TimedOut == nil && !exists(r.Resource.UID) {
			if r.Started.Before(&again.Started) {
				again.Started = r.Started
			}
			continue
		}
		kept = append(kept, r)
	}
	return kept
}
