package health

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// rules is a spec parsed once, for one evaluation and the status built from it.
type rules struct {
	conditions []v1alpha1.UnhealthyCondition
	steps      []step
	// budget is nil when minHealthy or maxUnhealthy is unusable: then no
	// new remediation may start.
	budget       *budgetRule
	storm        stormRules
	healthyDelay time.Duration
	// pauseRequests are the spec's pause requests; any one pauses.
	pauseRequests []string
	// selector is spec.selector, parsed; nil when it does not parse.
	selector labels.Selector
}

func (r *rules) paused() bool { return len(r.pauseRequests) > 0 }

// parseSpec parses a spec, and finds what makes it unusable although the API
// server stored it: rules the CRD cannot afford (the same template twice in
// an escalation) and rules an object stored under an older schema may break.
// A spec with a problem disables its NodeHealthCheck; its rules are still
// good enough to clean up.
func parseSpec(spec *v1alpha1.NodeHealthCheckSpec, selector labels.Selector) (*rules, *Problem) {
	r := &rules{
		conditions:    unhealthyConditionsOf(spec),
		steps:         remediationSteps(spec),
		storm:         stormRulesOf(spec),
		pauseRequests: spec.PauseRequests,
		selector:      selector,
	}
	if spec.HealthyDelay != nil {
		r.healthyDelay = spec.HealthyDelay.Duration
	}
	budget, err := parseBudget(spec)
	if err != nil {
		return r, invalidSpec(err.Error())
	}
	r.budget = budget
	if problem := checkSpec(spec, r.steps); problem != nil {
		return r, problem
	}
	if r.selector == nil {
		selector, problem := ParseSelector(&spec.Selector)
		if problem != nil {
			return r, problem
		}
		r.selector = selector
	}
	return r, nil
}

// unhealthyConditionsOf is a spec's unhealthy conditions. Only an object
// that bypassed the API server, which defaults the field, has none: it
// gets the defaults.
func unhealthyConditionsOf(spec *v1alpha1.NodeHealthCheckSpec) []v1alpha1.UnhealthyCondition {
	if len(spec.UnhealthyConditions) == 0 {
		return v1alpha1.DefaultUnhealthyConditions()
	}
	return spec.UnhealthyConditions
}

// MaxSelectorBytes bounds a selector as a request's query carries it: the
// controller lists the nodes it selects at the API server, and a longer
// one would not fit a request's headers (1 MiB at most), failing every
// list. The CRD accepts any; tens of thousands of node names fit.
const MaxSelectorBytes = 256 << 10

// ParseSelector parses a NodeHealthCheck's selector: nil and the problem
// when it is invalid, or too long to list nodes with (MaxSelectorBytes).
func ParseSelector(selector *metav1.LabelSelector) (labels.Selector, *Problem) {
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, invalidSpec(fmt.Sprintf("The selector is invalid: %v", err))
	}
	if n := len(url.QueryEscape(parsed.String())); n > MaxSelectorBytes {
		return nil, invalidSpec(fmt.Sprintf("The selector takes %d bytes in a request, more than the %d a list of nodes may carry: select the nodes by a label they share", n, MaxSelectorBytes))
	}
	return parsed, nil
}

// checkSpec checks the templates.
func checkSpec(spec *v1alpha1.NodeHealthCheckSpec, steps []step) *Problem {
	hasEscalation := len(spec.EscalatingRemediations) > 0
	switch {
	case spec.RemediationTemplate == nil && !hasEscalation:
		return invalidSpec("set either remediationTemplate or at least one escalatingRemediations entry")
	case spec.RemediationTemplate != nil && hasEscalation:
		return invalidSpec("remediationTemplate and escalatingRemediations are mutually exclusive: set only one of them")
	}
	for _, s := range steps {
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
			return TemplateTwice(t.Kind, t.Namespace+"/"+t.Name)
		}
		templates[key] = true
	}
	return nil
}

// messageTemplateTwice (kind, name): two steps that name one template would
// create one remediation.
const messageTemplateTwice = "escalatingRemediations reference template %s %s twice: both steps would create the same remediation"

// TemplateTwice is the problem of two escalation steps that name one
// template; name is namespace/name, or the name of a cluster-scoped one.
func TemplateTwice(kind, name string) *Problem {
	return invalidSpec(fmt.Sprintf(messageTemplateTwice, kind, name))
}

func invalidSpec(message string) *Problem {
	return &Problem{Reason: v1alpha1.ReasonInvalidSpec, Message: message}
}
