package v1alpha1

import (
	"iter"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// RemediationSteps lists the remediation templates in the order they are
// tried: the one remediationTemplate (order 0, no timeout), or the
// escalatingRemediations by ascending order. It returns a sorted copy and
// never modifies the spec (upstream sorts it in place).
func (s *NodeHealthCheckSpec) RemediationSteps() []EscalatingRemediation {
	if s.RemediationTemplate != nil {
		return []EscalatingRemediation{{RemediationTemplate: *s.RemediationTemplate}}
	}
	steps := slices.Clone(s.EscalatingRemediations)
	slices.SortStableFunc(steps, func(a, b EscalatingRemediation) int { return a.Order - b.Order })
	return steps
}

// TemplateRefs lists the template references of the spec, in the order
// RemediationSteps tries them.
func (s *NodeHealthCheckSpec) TemplateRefs() []corev1.ObjectReference {
	steps := s.RemediationSteps()
	refs := make([]corev1.ObjectReference, len(steps))
	for i := range steps {
		refs[i] = steps[i].RemediationTemplate
	}
	return refs
}

// DefaultUnhealthyConditions are the unhealthyConditions the CRD defaults
// the field to (the kubebuilder:default marker of UnhealthyConditions).
func DefaultUnhealthyConditions() []UnhealthyCondition {
	return []UnhealthyCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 300 * time.Second}},
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: metav1.Duration{Duration: 300 * time.Second}},
	}
}

// IsControlPlane tells whether a node's labels carry a control-plane role:
// ControlPlaneRoleLabel or MasterRoleLabel, whatever their values.
func IsControlPlane(nodeLabels labels.Labels) bool {
	return nodeLabels.Has(ControlPlaneRoleLabel) || nodeLabels.Has(MasterRoleLabel)
}

// RecordedRemediations yields every remediation resource the status
// records, with its node.
func (s *NodeHealthCheckStatus) RecordedRemediations() iter.Seq2[string, *Remediation] {
	return func(yield func(string, *Remediation) bool) {
		for _, entry := range s.UnhealthyNodes {
			if entry == nil {
				continue
			}
			for _, rem := range entry.Remediations {
				if rem != nil && !yield(entry.Name, rem) {
					return
				}
			}
		}
	}
}
