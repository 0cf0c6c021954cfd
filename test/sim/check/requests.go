package check

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// What the checker reads of remediation resources and leases, and of the
// controller's requests as they reach the API server, answered or not.

func isRemediation(gvr schema.GroupVersionResource) bool {
	return slices.ContainsFunc(cluster.Kinds, func(k cluster.Kind) bool { return k.Remediation() == gvr })
}

// resource is what the invariants read of a remediation resource.
type remediationObj struct {
	obj          *unstructured.Unstructured
	node         string
	owner        types.UID
	ownerName    string
	template     string
	controlPlane bool
}

func resourceOf(obj *unstructured.Unstructured) remediationObj {
	r := remediationObj{obj: obj, node: obj.GetAnnotations()[v1alpha1.NodeNameAnnotation], template: obj.GetAnnotations()[v1alpha1.TemplateNameAnnotation]}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "NodeHealthCheck" {
			r.owner, r.ownerName = ref.UID, ref.Name
		}
	}
	_, r.controlPlane = obj.GetLabels()[v1alpha1.ControlPlaneNodeLabel]
	return r
}

// resources lists every remediation resource the API server has.
func (c *Checker) resources() []remediationObj {
	var all []remediationObj
	for _, k := range cluster.Kinds {
		for _, obj := range c.store.Stored(k.Remediation()) {
			all = append(all, resourceOf(obj))
		}
	}
	return all
}

// Attempt records a create of a remediation resource that reached the
// server, answered or not, and the read of a NodeHealthCheck that confirms
// its creates just before they are sent (for every node: it is read once a
// sync), reached or refused by a partition: a lease is taken or renewed for
// a step beside the confirmation, and the confirmation or the create may
// fail (429, 500, no connection) and be tried again.
func (c *Checker) Attempt(call *apiserver.Call) {
	var key runKey
	switch {
	case call.Verb == "create" && isRemediation(call.GVR):
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(call.Body) != nil {
			return
		}
		r := resourceOf(u)
		key = runKey{nhc: r.ownerName, node: r.node}
		c.unanswered = append(c.unanswered, unansweredCreate{call: call, remediationObj: r})
	case call.Verb == "list" && call.GVR == cluster.NodeHealthChecks && call.SelectedName() != "":
		key = runKey{nhc: call.SelectedName(), node: anyNode}
	default:
		return
	}
	c.createTries[key] = append(c.createTries[key], call.Arrived)
}

// unansweredCreate is a remediation create that reached the server, until
// its answer is served (Write): one never served was answered by a fault
// (429, 500, the server unavailable), and after a 500 or a refused
// connection the controller cannot tell whether it happened
// (heldByUnanswered).
type unansweredCreate struct {
	call *apiserver.Call
	remediationObj
}

// served drops a create from unanswered once its answer is served.
func (c *Checker) served(call *apiserver.Call) {
	c.unanswered = slices.DeleteFunc(c.unanswered, func(u unansweredCreate) bool { return u.call == call })
}

// LostAnswer counts a lease write whose answer was lost as an attempt to
// start a step on its node: it landed, but the controller saw an error and
// tries again before its create: a next step's lease taken while answers
// are lost is no renewal with nothing running. A
// remediation create whose answer was lost is remembered as uncertain.
func (c *Checker) LostAnswer(call *apiserver.Call) {
	if k, ok := cluster.KindOf(call.GVR); ok && call.Verb == "create" {
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(call.Body) == nil {
			r := resourceOf(u)
			c.uncertain[k] = append(c.uncertain[k], r)
			if nodes, forbidden := c.forbiddenNodes[k]; forbidden {
				nodes[r.node] = nodes[r.node] || r.controlPlane
			}
		}
		return
	}
	if call.GVR != cluster.Leases || (call.Verb != "update" && call.Verb != "create") {
		return
	}
	u := &unstructured.Unstructured{}
	if u.UnmarshalJSON(call.Body) != nil {
		return
	}
	node, lease := leaseOf(u)
	if nhc, ours := health.LeaseHolderNHC(lease.Holder); ours {
		key := runKey{nhc: nhc, node: node}
		c.createTries[key] = append(c.createTries[key], call.Arrived)
	}
}

// anyNode keys the attempts that may be for any node.
const anyNode = "*"

func nameOf(call *apiserver.Call) string {
	u := &unstructured.Unstructured{}
	_ = u.UnmarshalJSON(call.Body)
	return u.GetName()
}

func leaseOf(obj *unstructured.Unstructured) (node string, lease health.NodeLease) {
	var l coordinationv1.Lease
	cluster.FromUnstructured(obj, &l)
	node, _ = health.LeaseNode(l.Name, "")
	return node, nodeLeaseOf(&l)
}

// nodeLeaseOf is what decisions read of a lease.
func nodeLeaseOf(l *coordinationv1.Lease) (lease health.NodeLease) {
	lease.Holder = ptr.Deref(l.Spec.HolderIdentity, "")
	lease.Duration = time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
	if l.Spec.RenewTime != nil {
		lease.Renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.AcquireTime != nil {
		lease.Acquired = l.Spec.AcquireTime.Time
	}
	return lease
}
