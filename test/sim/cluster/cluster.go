// Package cluster names what the simulated cluster is made of: the
// resources of nodes, namespaces, leases and NodeHealthChecks, and the
// remediators' kinds with their resources and templates. It holds names
// only, no state, so that the world that builds the cluster (package sim),
// the generator that draws its histories (gen) and the checker that reads
// it (check) name the same things without importing each other.
package cluster

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The resources of the simulated cluster beside the remediators'.
var (
	Nodes            = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	Namespaces       = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	Leases           = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	NodeHealthChecks = v1alpha1.SchemeGroupVersion.WithResource("nodehealthchecks")
)

// RemediatorGroup and RemediatorVersion are the API group and version of
// the simulated remediators' kinds.
const (
	RemediatorGroup   = "sim.medik8s.io"
	RemediatorVersion = "v1alpha1"
)

// Kind is a remediator's kind: "Alpha" serves AlphaRemediation and
// AlphaRemediationTemplate.
type Kind string

// Remediation is the resource of the kind's remediation resources.
func (k Kind) Remediation() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: RemediatorGroup, Version: RemediatorVersion, Resource: strings.ToLower(string(k)) + "remediations"}
}

// Template is the resource of the kind's remediation templates.
func (k Kind) Template() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: RemediatorGroup, Version: RemediatorVersion, Resource: strings.ToLower(string(k)) + "remediationtemplates"}
}

// Kinds are the remediators a history may use.
var Kinds = []Kind{"Alpha", "Beta", "Gamma"}

// KindOf is the kind whose remediation resource a resource is.
func KindOf(gvr schema.GroupVersionResource) (Kind, bool) {
	for _, k := range Kinds {
		if k.Remediation() == gvr {
			return k, true
		}
	}
	return "", false
}

// KindOfRemediation is the kind of a remediation resource's Kind
// ("AlphaRemediation" is "Alpha").
func KindOfRemediation(kind string) Kind { return Kind(strings.TrimSuffix(kind, "Remediation")) }

// KindOfTemplate is the kind of a template's Kind ("AlphaRemediationTemplate"
// is "Alpha").
func KindOfTemplate(kind string) Kind { return Kind(strings.TrimSuffix(kind, "RemediationTemplate")) }
