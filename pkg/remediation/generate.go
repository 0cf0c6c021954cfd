package remediation

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// newRemediation generates the remediation resource for a node from a
// template, following the contract remediators rely on:
//   - the template's apiVersion, and its kind without the "Template" suffix;
//   - the template's namespace, and the node's name as name; or, when the
//     template carries the multiple-templates-support annotation, since one
//     node may then have several, "<node>-<hash>", where the hash is stable
//     for the NodeHealthCheck and the template: a repeated create, from a
//     stale decision or after a crash, meets AlreadyExists instead of making
//     a second resource (upstream's generateName would);
//   - spec: a deep copy of the template's spec.template.spec;
//   - an owner reference to the NodeHealthCheck, with its UID;
//   - the node-name and template-name annotations, the part-of label, and the
//     control-plane label for control-plane nodes.
func newRemediation(template *unstructured.Unstructured, nhc *v1alpha1.NodeHealthCheck, node string, controlPlane bool) (*unstructured.Unstructured, error) {
	spec, err := resource.TemplateSpec(template)
	if err != nil {
		return nil, err
	}
	r := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	r.SetAPIVersion(template.GetAPIVersion())
	r.SetKind(health.RemediationKind(template.GetKind()))
	r.SetNamespace(template.GetNamespace())
	r.SetName(node)
	if resource.SupportsMultipleTemplates(template) {
		r.SetName(stepName(node, nhc, template))
	}
	r.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.SchemeGroupVersion.String(),
		Kind:       "NodeHealthCheck",
		Name:       nhc.Name,
		UID:        nhc.UID,
		Controller: ptr.To(false),
	}})
	r.SetAnnotations(map[string]string{
		v1alpha1.NodeNameAnnotation:     node,
		v1alpha1.TemplateNameAnnotation: template.GetName(),
	})
	labels := map[string]string{v1alpha1.PartOfLabel: v1alpha1.PartOfValue}
	if controlPlane {
		labels[v1alpha1.ControlPlaneNodeLabel] = ""
	}
	r.SetLabels(labels)
	return r, nil
}

// stepNameHashLength is the number of hex digits of a step's name hash.
const stepNameHashLength = 10

// stepName is the name of a node's resource from a template that allows
// several per node: the node's name and a hash of the NodeHealthCheck's UID
// and the template. A node name too long to fit whole is shortened, and
// then hashed too, so that two nodes that share the part kept never share
// a name.
func stepName(node string, nhc *v1alpha1.NodeHealthCheck, template *unstructured.Unstructured) string {
	hashed := string(nhc.UID) + "/" + template.GetAPIVersion() + "/" + template.GetKind() + "/" + template.GetNamespace() + "/" + template.GetName()
	kept := validation.DNS1123SubdomainMaxLength - 1 - stepNameHashLength
	if len(node) > kept {
		hashed += "/" + node
	}
	sum := sha256.Sum256([]byte(hashed))
	return strings.TrimRight(node[:min(len(node), kept)], ".-") + "-" + hex.EncodeToString(sum[:])[:stepNameHashLength]
}
