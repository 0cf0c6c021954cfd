package templates

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTwoStepsNamingOneTemplateAreRefused(t *testing.T) {
	clusterV1 := schema.GroupVersionResource{Group: "fence.example", Version: "v1", Resource: "clusterfencetemplates"}
	clusterV2 := clusterV1
	clusterV2.Version = "v2"
	namespaced := schema.GroupVersionResource{Group: "snr.example", Version: "v1", Resource: "snrtemplates"}
	template := func(gvr schema.GroupVersionResource, refNamespace, namespace, name string) Template {
		return Template{Ref: corev1.ObjectReference{Kind: "Template", Namespace: refNamespace, Name: name}, Resource: gvr, Namespace: namespace}
	}
	cases := []struct {
		name      string
		templates []Template
		refused   bool
	}{
		{"one cluster-scoped template, references in two namespaces",
			[]Template{template(clusterV1, "a", "", "t"), template(clusterV1, "b", "", "t")}, true},
		{"one template through two versions of its kind",
			[]Template{template(clusterV1, "a", "", "t"), template(clusterV2, "a", "", "t")}, true},
		{"namespaced templates of one name in two namespaces",
			[]Template{template(namespaced, "a", "a", "t"), template(namespaced, "b", "b", "t")}, false},
		{"two cluster-scoped templates", []Template{template(clusterV1, "a", "", "t"), template(clusterV1, "a", "", "u")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problem := CheckDistinct(tc.templates)
			if !tc.refused {
				assert.Nil(t, problem)
				return
			}
			if assert.NotNil(t, problem) {
				assert.Equal(t, "escalatingRemediations reference template Template t twice: both steps would create the same remediation", problem.Message)
			}
		})
	}
}
