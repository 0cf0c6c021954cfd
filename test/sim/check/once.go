package check

import (
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// InvStepOnce: within one incident of a node, a step runs once
// (docs/remediation.md, the incident's table: "step k timed out | its
// resource is gone | ... k never runs again in this incident"). Once a
// later step's resource was created, no resource of that step or an
// earlier one is created again; a step's resource is created again only
// when the step was resumed: its resource was deleted by someone other
// than the controller (its remediator, a user, the garbage collector, an
// uninstall) before it timed out (the timed-out annotation, or its record
// in the status), and "step k running since t | its resource is gone"
// creates it again on its first clock.
const InvStepOnce = "step-once-per-incident"

// stepOnce checks a new remediation resource against the resources of
// its NodeHealthCheck's steps created for the node earlier in its
// incident.
func (c *Checker) stepOnce(obj *unstructured.Unstructured, r remediationObj) {
	now := time.Now()
	nhc, steps, i := c.stepOfNew(obj, r, now)
	if i < 0 {
		return
	}
	// The latest instant the incident may have begun (incidentStart): any
	// recovery the controller may have seen may have ended the last one.
	incident := c.incidentStart(nhc, r.node, now)
	if !c.stepsSteady(nhc, steps, incident, now) {
		// Its steps were edited during the incident: an index is not the
		// same step throughout.
		return
	}
	var again []*resourceLife
	for k := range c.lives {
		l := &c.lives[k]
		if l.owner != r.owner || l.node != r.node || !l.created.After(incident) || l.obj.GetUID() == obj.GetUID() {
			continue
		}
		j := stepIndex(steps, l.obj.GetKind(), l.template)
		if j < i || (j == i && l.deleted.IsZero()) {
			// An earlier step; or the same step's resource still there,
			// which one-resource-per-node-and-step judges.
			continue
		}
		if j == i && !l.deletedByController && l.timedOut.IsZero() {
			// Resumed: deleted by someone else before it timed out.
			continue
		}
		again = append(again, l)
	}
	if len(again) == 0 {
		return
	}
	l := again[0]
	why := "timed out"
	switch j := stepIndex(steps, l.obj.GetKind(), l.template); {
	case j > i:
		why = "was followed by step " + stepName(steps, j)
	case l.deletedByController:
		why = "was deleted by the controller"
	}
	c.fail(InvStepOnce, "%s created for node %s as step %s of NodeHealthCheck %s, though %s/%s of the incident since %s, created at %s, %s",
		describe(obj), r.node, stepName(steps, i), nhc.Name, l.namespace, l.name, incident.Format("15:04:05"), l.created.Format("15:04:05"), why)
}

// stepName names a step by its number and template.
func stepName(steps []v1alpha1.EscalatingRemediation, i int) string {
	return fmt.Sprintf("%d (%s)", i+1, steps[i].RemediationTemplate.Name)
}

// stepsSteady tells whether every version of a NodeHealthCheck from one
// instant to another had the same steps.
func (c *Checker) stepsSteady(nhc *v1alpha1.NodeHealthCheck, steps []v1alpha1.EscalatingRemediation, from, to time.Time) bool {
	if then := c.nhcAt(nhc.Name, from); then != nil && then.UID == nhc.UID && !apiequality.Semantic.DeepEqual(then.Spec.RemediationSteps(), steps) {
		return false
	}
	for _, v := range c.nhcs[nhc.Name] {
		if !v.at.After(from) || v.at.After(to) || v.obj == nil {
			continue
		}
		then := typedOf[v1alpha1.NodeHealthCheck](c, v.obj)
		if then.UID == nhc.UID && !apiequality.Semantic.DeepEqual(then.Spec.RemediationSteps(), steps) {
			return false
		}
	}
	return true
}

// timedOutOnStatus marks the resources a status records timed out.
func (c *Checker) timedOutOnStatus(nhc *v1alpha1.NodeHealthCheck) {
	for _, entry := range nhc.Status.UnhealthyNodes {
		for _, rem := range entryRemediations(entry) {
			if rem.TimedOut == nil {
				continue
			}
			for i := range c.lives {
				if l := &c.lives[i]; l.obj.GetUID() == rem.Resource.UID && l.timedOut.IsZero() {
					l.timedOut = time.Now()
				}
			}
		}
	}
}
