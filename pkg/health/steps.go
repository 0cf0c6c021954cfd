package health

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// step is one remediation template in the order it is tried.
type step struct {
	template corev1.ObjectReference
	// group and kind are those of the resources created from the template.
	group, kind string
	// timeout is 0 for remediationTemplate, which runs until the node is healthy.
	timeout time.Duration
}

// remediationSteps lists the templates in the order they are tried.
func remediationSteps(spec *v1alpha1.NodeHealthCheckSpec) []step {
	escalations := spec.RemediationSteps()
	steps := make([]step, 0, len(escalations))
	for _, e := range escalations {
		steps = append(steps, newStep(e.RemediationTemplate, e.Timeout.Duration))
	}
	return steps
}

func newStep(template corev1.ObjectReference, timeout time.Duration) step {
	return step{
		template: template,
		group:    apiGroup(template.APIVersion),
		kind:     RemediationKind(template.Kind),
		timeout:  timeout,
	}
}

// RemediationKind is the kind of the resources created from a template kind:
// the template kind without its "Template" suffix.
func RemediationKind(templateKind string) string {
	return strings.TrimSuffix(templateKind, "Template")
}

// apiGroup returns the group of an apiVersion: "" for the core group.
func apiGroup(apiVersion string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group
}

// stepOf returns the index of the step a resource was created from, or -1
// when no step matches (the spec changed since). Resources without a template
// name, from older controllers, match the first step of their kind.
func stepOf(steps []step, ref *corev1.ObjectReference, templateName string) int {
	group := apiGroup(ref.APIVersion)
	for i := range steps {
		s := &steps[i]
		// A cluster-scoped resource has no namespace, whatever namespace the
		// reference to its cluster-scoped template carries.
		if s.kind == ref.Kind && s.group == group && (ref.Namespace == "" || s.template.Namespace == ref.Namespace) &&
			(templateName == "" || templateName == s.template.Name) {
			return i
		}
	}
	return -1
}
