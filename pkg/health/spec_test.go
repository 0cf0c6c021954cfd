package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		name    string
		opts    []nhcOption
		wantErr string
	}{
		{"the test spec", nil, ""},
		{"an escalation", []nhcOption{threeSteps()}, ""},
		{"two templates of one kind", []nhcOption{escalating(escalationStep(multiOne, 1, time.Minute), escalationStep(multiTwo, 2, time.Minute))}, ""},
		{"the same template twice", []nhcOption{escalating(escalationStep(multiOne, 1, time.Minute), escalationStep(multiOne, 2, time.Minute))},
			"escalatingRemediations reference template MultiTemplate ns/one twice"},
		{"duplicate orders", []nhcOption{escalating(escalationStep(templateA, 1, time.Minute), escalationStep(templateB, 1, time.Minute))},
			"order values must be unique: 1 is used twice"},
		{"no template", []nhcOption{func(n *v1alpha1.NodeHealthCheck) { n.Spec.RemediationTemplate = nil }}, "set either remediationTemplate"},
		{"both", []nhcOption{func(n *v1alpha1.NodeHealthCheck) {
			n.Spec.EscalatingRemediations = []v1alpha1.EscalatingRemediation{escalationStep(templateA, 1, time.Minute)}
		}}, "mutually exclusive"},
		{"a kind without the suffix", []nhcOption{func(n *v1alpha1.NodeHealthCheck) { n.Spec.RemediationTemplate.Kind = "SelfNodeRemediation" }}, "a kind that ends with Template"},
		{"a percentage that is no percentage", []nhcOption{minHealthy(intstr.FromString("5x%"))}, "minHealthy must be a percentage"},
		{"neither minHealthy nor maxUnhealthy", []nhcOption{func(n *v1alpha1.NodeHealthCheck) { n.Spec.MinHealthy = nil }}, "set one of minHealthy or maxUnhealthy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, p := parseSpec(&testNHC(tc.opts...).Spec, nil)
			if tc.wantErr == "" {
				assert.Nil(t, p)
				return
			}
			if assert.NotNil(t, p) {
				assert.Equal(t, v1alpha1.ReasonInvalidSpec, p.Reason)
				assert.Contains(t, p.Message, tc.wantErr)
			}
		})
	}
}
