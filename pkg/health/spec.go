package health

import (
	"fmt"
	"strings"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// CheckSpec finds what makes a spec unusable although the API server stored
// it: rules the CRD cannot afford (the same template twice in an escalation)
// and rules an object stored under an older schema may break. The controller
// disables a NodeHealthCheck with such a problem.
func CheckSpec(spec *v1alpha1.NodeHealthCheckSpec) *Problem {
	if _, err := MinHealthy(spec, 0); err != nil {
		return invalidSpec(err.Error())
	}
	hasEscalation := len(spec.EscalatingRemediations) > 0
	switch {
	case spec.RemediationTemplate == nil && !hasEscalation:
		return invalidSpec("set either remediationTemplate or at least one escalatingRemediations entry")
	case spec.RemediationTemplate != nil && hasEscalation:
		return invalidSpec("remediationTemplate and escalatingRemediations are mutually exclusive: set only one of them")
	}
	for _, s := range remediationSteps(spec) {
		t := s.template
		if t.APIVersion == "" || t.Name == "" || !strings.HasSuffix(t.Kind, "Template") || t.Kind == "Template" {
			return invalidSpec(fmt.Sprintf("template reference %s %s/%s needs an apiVersion, a name, and a kind that ends with Template", t.Kind, t.Namespace, t.Name))
		}
	}
	orders := map[int]bool{}
	templates := map[string]bool{}
	for _, e := range spec.EscalatingRemediations {
		if orders[e.Order] {
			return invalidSpec(fmt.Sprintf("escalatingRemediations order values must be unique: %d is used twice", e.Order))
		}
		orders[e.Order] = true
		t := e.RemediationTemplate
		key := fmt.Sprintf("%s %s %s/%s", t.APIVersion, t.Kind, t.Namespace, t.Name)
		if templates[key] {
			return invalidSpec(fmt.Sprintf("escalatingRemediations reference template %s %s/%s twice: both steps would create the same remediation", t.Kind, t.Namespace, t.Name))
		}
		templates[key] = true
	}
	return nil
}

func invalidSpec(message string) *Problem {
	return &Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: message}
}
