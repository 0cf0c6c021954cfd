package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The kinds of the simulated cluster.
var (
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	leasesGVR     = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	nhcGVR        = v1alpha1.SchemeGroupVersion.WithResource("nodehealthchecks")
)

// remediatorGroup is the API group of the simulated remediators' kinds.
const (
	remediatorGroup   = "sim.medik8s.io"
	remediatorVersion = "v1alpha1"
	templateNamespace = "remediators"
	poolLabel         = "pool"
	nmoHolder         = "node-maintenance-operator"
	nmoLeaseDuration  = 90 * time.Second
)

// Kind is a remediator's kind: "Alpha" serves AlphaRemediation and
// AlphaRemediationTemplate.
type Kind string

func (k Kind) remediation() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: remediatorGroup, Version: remediatorVersion, Resource: strings.ToLower(string(k)) + "remediations"}
}

func (k Kind) template() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: remediatorGroup, Version: remediatorVersion, Resource: strings.ToLower(string(k)) + "remediationtemplates"}
}

// kinds are the remediators a history may use.
var kinds = []Kind{"Alpha", "Beta", "Gamma"}

// kindOf is the kind whose remediation resource a resource is.
func kindOf(gvr schema.GroupVersionResource) (Kind, bool) {
	for _, k := range kinds {
		if k.remediation() == gvr {
			return k, true
		}
	}
	return "", false
}

// boot defines the kinds and the namespaces every history starts with.
func (s *sim) boot() {
	st := s.server.store
	st.define(resource{gvr: nodesGVR, kind: "Node", status: true, served: true})
	st.define(resource{gvr: namespacesGVR, kind: "Namespace", served: true})
	st.define(resource{gvr: leasesGVR, kind: "Lease", namespaced: true, served: true})
	st.define(resource{gvr: nhcGVR, kind: "NodeHealthCheck", status: true, served: true})
	for _, k := range kinds {
		st.define(resource{gvr: k.remediation(), kind: string(k) + "Remediation", namespaced: true, status: true, served: true})
		st.define(resource{gvr: k.template(), kind: string(k) + "RemediationTemplate", namespaced: true, served: true})
	}
	for _, ns := range []string{templateNamespace, leaseNamespace} {
		s.mustCreate(namespacesGVR, object("v1", "Namespace", "", ns))
	}
}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func (s *sim) mustCreate(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
	if _, err := s.server.store.create(gvr, obj); err != nil {
		panic(fmt.Sprintf("creating %s %s: %v", gvrOf(gvr), obj.GetName(), err))
	}
}

// edit changes an object in place at the API server, as its owner's
// client would; a missing object is left alone.
func (s *sim) edit(gvr schema.GroupVersionResource, namespace, name string, status bool, change func(u *unstructured.Unstructured)) {
	st := s.server.store
	obj, err := st.get(gvr, namespace, name)
	if err != nil {
		return
	}
	change(obj)
	if _, err := st.update(gvr, obj, status); err != nil {
		panic(fmt.Sprintf("editing %s %s: %v", gvrOf(gvr), name, err))
	}
}

// toUnstructured converts a typed object.
func toUnstructured(obj any) *unstructured.Unstructured {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		panic(err)
	}
	return u
}

// fromUnstructured converts into a typed object.
func fromUnstructured(u *unstructured.Unstructured, into any) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		panic(err)
	}
}

func nowTime() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }
