package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The checker's bookkeeping: the history of the objects the invariants
// read, and what it hears of the API server's changes and the
// controller's requests.

// version is an object as the API server had it from an instant on; nil
// obj: deleted.
type version struct {
	at  time.Time
	obj *unstructured.Unstructured
}

// checker checks the invariants after every change and every wake-up.
type checker struct {
	s         *sim
	violation *Violation
	// nodes and nhcs are every version of every node and NodeHealthCheck.
	nodes, nhcs map[string][]version
	// created are the remediation resources ever created, by UID, with
	// their owner's UID.
	created map[types.UID]types.UID
	// running are the instants each (NodeHealthCheck, node) ran a step.
	running map[runKey]*runs
	// leaseWrites are renewals of ours that wait for their verdict.
	leaseWrites []leaseWrite
	// forbiddenNodes are, by kind turned forbidden, the nodes its
	// resources remediated then; forbiddenSince is when it turned.
	forbiddenNodes map[Kind]map[string]bool
	forbiddenSince map[Kind]time.Time
	// readableAgain is when each kind last stopped being forbidden.
	readableAgain map[Kind]time.Time
	// uncertain are, by kind, the creates of its resources whose answer
	// was lost, until the kind is readable again: while it is not, the
	// controller cannot look them up, and they hold as its resources do.
	uncertain map[Kind][]remediationObj
	// unseen are, by kind, the creates of its resources answered to a
	// replica whose informer has not shown them (unseen.go).
	unseen map[Kind][]unseenCreate
	// leaderStarted is when the leading replica started.
	leaderStarted time.Time
	// createTries are when each (NodeHealthCheck, node) last tried to
	// create a remediation resource, whatever the answer.
	createTries map[runKey][]time.Time
	// unhealthySince is when nothing stood in a node's way any more.
	unhealthySince map[string]time.Time
	// calmSince is since when no fault, partition or watch problem is on.
	calmSince time.Time
	// checks counts the checks made.
	checks int
	// typed caches the typed form of stored objects, by UID and
	// resourceVersion.
	typed map[string]any
	// lives are when each remediation resource existed.
	lives []resourceLife
	// stormCreates wait for the status after them (rules.go).
	stormCreates []stormCreate
	// healthySince is when each (NodeHealthCheck, node) with a resource
	// was last seen turning healthy (progress.go).
	healthySince map[runKey]time.Time
	// releaseSince is when each lease of ours was first seen with nothing
	// left to hold it (progress.go).
	releaseSince map[runKey]time.Time
	// escalateSince is since when nothing has held back each
	// (NodeHealthCheck, node)'s next step (progress.go).
	escalateSince map[runKey]time.Time
	// answeredCreates are the UIDs of the creates answered 201, by replica,
	// resource and name (rules.go).
	answeredCreates map[string]string
}

// typedOf converts a stored object once per version.
func typedOf[T any](c *checker, u *unstructured.Unstructured) *T {
	key := string(u.GetUID()) + "/" + u.GetResourceVersion()
	if t, ok := c.typed[key].(*T); ok {
		return t
	}
	t := new(T)
	fromUnstructured(u, t)
	c.typed[key] = t
	return t
}

// allNodes and allNHCs are the nodes and NodeHealthChecks the API server
// has now.
func (c *checker) allNodes() []*corev1.Node {
	var nodes []*corev1.Node
	for _, u := range c.s.server.store.stored(nodesGVR) {
		nodes = append(nodes, typedOf[corev1.Node](c, u))
	}
	return nodes
}

func (c *checker) allNHCs() []*v1alpha1.NodeHealthCheck {
	var nhcs []*v1alpha1.NodeHealthCheck
	for _, u := range c.s.server.store.stored(nhcGVR) {
		nhcs = append(nhcs, typedOf[v1alpha1.NodeHealthCheck](c, u))
	}
	return nhcs
}

func newChecker(s *sim) *checker {
	return &checker{s: s, nodes: map[string][]version{}, nhcs: map[string][]version{}, created: map[types.UID]types.UID{}, typed: map[string]any{},
		running: map[runKey]*runs{}, createTries: map[runKey][]time.Time{}, forbiddenNodes: map[Kind]map[string]bool{}, forbiddenSince: map[Kind]time.Time{}, readableAgain: map[Kind]time.Time{}, uncertain: map[Kind][]remediationObj{}, unseen: map[Kind][]unseenCreate{}, unhealthySince: map[string]time.Time{}, healthySince: map[runKey]time.Time{}, releaseSince: map[runKey]time.Time{}, escalateSince: map[runKey]time.Time{}, answeredCreates: map[string]string{}}
}

func (c *checker) fail(invariant, format string, args ...any) {
	if c.violation == nil {
		c.violation = &Violation{Invariant: invariant, At: time.Now(), Detail: fmt.Sprintf(format, args...)}
	}
}

func (c *checker) failed() bool { return c.violation != nil }

// at returns the version of an object at an instant, or nil. Versions are
// appended in time order.
func at(versions []version, t time.Time) *unstructured.Unstructured {
	i := sort.Search(len(versions), func(i int) bool { return versions[i].at.After(t) })
	if i == 0 {
		return nil
	}
	return versions[i-1].obj
}

func (c *checker) nodeAt(name string, t time.Time) *corev1.Node {
	u := at(c.nodes[name], t)
	if u == nil {
		return nil
	}
	return typedOf[corev1.Node](c, u)
}

func (c *checker) nhcAt(name string, t time.Time) *v1alpha1.NodeHealthCheck {
	u := at(c.nhcs[name], t)
	if u == nil {
		return nil
	}
	return typedOf[v1alpha1.NodeHealthCheck](c, u)
}

// observe hears of every change the API server makes.
func (c *checker) observe(gvr schema.GroupVersionResource, e event, old *unstructured.Unstructured) {
	c.checks++
	var obj *unstructured.Unstructured
	if e.typ != watch.Deleted {
		obj = e.obj.DeepCopy()
	}
	switch {
	case gvr == nodesGVR:
		c.nodes[e.obj.GetName()] = append(c.nodes[e.obj.GetName()], version{at: time.Now(), obj: obj})
	case gvr == nhcGVR:
		c.nhcs[e.obj.GetName()] = append(c.nhcs[e.obj.GetName()], version{at: time.Now(), obj: obj})
		if obj != nil {
			c.stormStatus(typedOf[v1alpha1.NodeHealthCheck](c, obj))
		}
	case gvr == leasesGVR && obj != nil:
		c.leaseWritten(obj, old)
	case isRemediation(gvr) && e.typ == watch.Added:
		c.resourceCreated(obj)
		c.lives = append(c.lives, resourceLife{remediationObj: resourceOf(obj), namespace: obj.GetNamespace(), name: obj.GetName(), created: time.Now()})
	case isRemediation(gvr) && e.typ == watch.Deleted:
		for i := range c.lives {
			if l := &c.lives[i]; l.obj.GetUID() == e.obj.GetUID() && l.deleted.IsZero() {
				l.deleted = time.Now()
			}
		}
	}
}

func isRemediation(gvr schema.GroupVersionResource) bool {
	return slices.ContainsFunc(kinds, func(k Kind) bool { return k.remediation() == gvr })
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
func (c *checker) resources() []remediationObj {
	var all []remediationObj
	for _, k := range kinds {
		for _, obj := range c.s.server.store.stored(k.remediation()) {
			all = append(all, resourceOf(obj))
		}
	}
	return all
}

// attempt records a create of a remediation resource that reached the
// server, answered or not, and the read of a NodeHealthCheck that confirms
// its creates just before they are sent (for every node: it is read once a
// sync): a lease is taken or renewed for a step first, and the confirmation
// or the create may fail (429, 500) and be tried again.
func (c *checker) attempt(call *call) {
	var key runKey
	switch {
	case call.r.verb == "create" && isRemediation(call.r.gvr):
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(call.r.body) != nil {
			return
		}
		r := resourceOf(u)
		key = runKey{nhc: r.ownerName, node: r.node}
	case call.r.verb == "get" && call.r.gvr == nhcGVR && call.r.subresource == "":
		key = runKey{nhc: call.r.name, node: anyNode}
	default:
		return
	}
	c.createTries[key] = append(c.createTries[key], call.arrived)
}

// lostAnswer counts a lease write whose answer was lost as an attempt to
// start a step on its node: it landed, but the controller saw an error and
// tries again before its create: a next step's lease taken while answers
// are lost is no renewal with nothing running. A
// remediation create whose answer was lost is remembered as uncertain.
func (c *checker) lostAnswer(call *call) {
	if k, ok := kindOf(call.r.gvr); ok && call.r.verb == "create" {
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(call.r.body) == nil {
			r := resourceOf(u)
			c.uncertain[k] = append(c.uncertain[k], r)
			if nodes, forbidden := c.forbiddenNodes[k]; forbidden {
				nodes[r.node] = nodes[r.node] || r.controlPlane
			}
		}
		return
	}
	if call.r.gvr != leasesGVR || (call.r.verb != "update" && call.r.verb != "create") {
		return
	}
	u := &unstructured.Unstructured{}
	if u.UnmarshalJSON(call.r.body) != nil {
		return
	}
	node, lease := leaseOf(u)
	if nhc, ours := health.LeaseHolderNHC(lease.Holder); ours {
		key := runKey{nhc: nhc, node: node}
		c.createTries[key] = append(c.createTries[key], call.arrived)
	}
}

// anyNode keys the attempts that may be for any node.
const anyNode = "*"

func nameOf(call *call) string {
	u := &unstructured.Unstructured{}
	_ = u.UnmarshalJSON(call.r.body)
	return u.GetName()
}

func leaseOf(obj *unstructured.Unstructured) (node string, lease health.NodeLease) {
	var l coordinationv1.Lease
	fromUnstructured(obj, &l)
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
