package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The world's names beside the kinds (package cluster): where the
// templates live, the label that makes node pools, and
// node-maintenance-operator's lease.
const (
	templateNamespace = "remediators"
	poolLabel         = "pool"
	nmoHolder         = "node-maintenance-operator"
	nmoLeaseDuration  = 90 * time.Second
)

// boot defines the kinds and the namespaces every history starts with.
func (s *sim) boot() {
	st := s.server.Store()
	st.Define(apiserver.Resource{GVR: cluster.Nodes, Kind: "Node", Status: true, Served: true})
	st.Define(apiserver.Resource{GVR: cluster.Namespaces, Kind: "Namespace", Served: true})
	st.Define(apiserver.Resource{GVR: cluster.Leases, Kind: "Lease", Namespaced: true, Served: true})
	st.Define(apiserver.Resource{GVR: cluster.NodeHealthChecks, Kind: "NodeHealthCheck", Status: true, Served: true})
	for _, k := range cluster.Kinds {
		st.Define(apiserver.Resource{GVR: k.Remediation(), Kind: string(k) + "Remediation", Namespaced: true, Status: true, Served: true})
		st.Define(apiserver.Resource{GVR: k.Template(), Kind: string(k) + "RemediationTemplate", Namespaced: true, Served: true})
	}
	for _, ns := range []string{templateNamespace, leaseNamespace} {
		s.mustCreate(cluster.Namespaces, object("v1", "Namespace", "", ns))
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
	if _, err := s.server.Store().Create(gvr, obj); err != nil {
		panic(fmt.Sprintf("creating %s %s: %v", gvrOf(gvr), obj.GetName(), err))
	}
}

// edit changes an object in place at the API server, as its owner's
// client would; a missing object is left alone.
func (s *sim) edit(gvr schema.GroupVersionResource, namespace, name string, status bool, change func(u *unstructured.Unstructured)) {
	st := s.server.Store()
	obj, err := st.Get(gvr, namespace, name)
	if err != nil {
		return
	}
	change(obj)
	if _, err := st.Update(gvr, obj, status); err != nil {
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

func nowTime() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// gvrOf names a resource "group/version/resource" for messages.
func gvrOf(gvr schema.GroupVersionResource) string {
	return strings.TrimPrefix(gvr.Group+"/"+gvr.Version+"/"+gvr.Resource, "/")
}
