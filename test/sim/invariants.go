package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The invariants, by name; a failure names the one it broke.
const (
	InvOneControlPlane  = "one-control-plane-node"
	InvHealthyAtCreate  = "no-create-for-healthy-node"
	InvOneResourceStep  = "one-resource-per-node-and-step"
	InvOneNHCPerNode    = "one-nodehealthcheck-per-node"
	InvLeaseWhileActing = "lease-only-while-a-step-runs"
	InvLiveness         = "unhealthy-node-remediated"
	InvStatusTruthful   = "status-shows-the-cluster"
)

// The documented bounds (docs/architecture.md, "The simulation").
const (
	// livenessBound is how long after an unhealthy condition's duration
	// passed, with nothing in the way, a node gets its resource.
	livenessBound = 2 * time.Minute
	// statusBound is how long the status may lag behind the resources.
	statusBound = 2 * time.Minute
	// leaseLag is how far a lease write may be from the step's run: the
	// controller sees the cluster through watches.
	leaseLag = 5 * time.Second
)

// Violation is a broken invariant.
type Violation struct {
	Invariant string
	At        time.Time
	Detail    string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %s broken at %s: %s", v.Invariant, v.At.Format("15:04:05"), v.Detail)
}

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
		running: map[runKey]*runs{}, createTries: map[runKey][]time.Time{}, forbiddenNodes: map[Kind]map[string]bool{}, forbiddenSince: map[Kind]time.Time{}, readableAgain: map[Kind]time.Time{}, uncertain: map[Kind][]remediationObj{}, unhealthySince: map[string]time.Time{}}
}

func (c *checker) fail(invariant, format string, args ...any) {
	if c.violation == nil {
		c.violation = &Violation{Invariant: invariant, At: time.Now(), Detail: fmt.Sprintf(format, args...)}
	}
}

func (c *checker) failed() bool { return c.violation != nil }

// at returns the version of an object at an instant, or nil.
func at(versions []version, t time.Time) *unstructured.Unstructured {
	var obj *unstructured.Unstructured
	for _, v := range versions {
		if v.at.After(t) {
			break
		}
		obj = v.obj
	}
	return obj
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
	case gvr == leasesGVR && obj != nil:
		c.leaseWritten(obj, old)
	case isRemediation(gvr) && e.typ == watch.Added:
		c.resourceCreated(obj)
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

// resourceCreated checks a new remediation resource against those there
// already: one control-plane node at a time, one resource per node and
// step, one NodeHealthCheck per node.
func (c *checker) resourceCreated(obj *unstructured.Unstructured) {
	r := resourceOf(obj)
	c.created[obj.GetUID()] = r.owner
	for _, other := range c.resources() {
		if other.obj.GetUID() == obj.GetUID() || c.unknowable(other) {
			continue
		}
		switch {
		case r.controlPlane && other.controlPlane && other.node != r.node && c.stillControlPlane(other.node):
			c.fail(InvOneControlPlane, "%s created for control-plane node %s while %s remediates control-plane node %s", describe(obj), r.node, describe(other.obj), other.node)
		case other.node == r.node && other.owner == r.owner && other.template == r.template && other.obj.GetKind() == obj.GetKind():
			c.fail(InvOneResourceStep, "%s created for node %s beside %s of the same step", describe(obj), r.node, describe(other.obj))
		case other.node == r.node && other.owner != r.owner:
			c.fail(InvOneNHCPerNode, "%s of NodeHealthCheck %s created for node %s, which %s of NodeHealthCheck %s remediates", describe(obj), r.ownerName, r.node, describe(other.obj), other.ownerName)
		}
	}
}

// unknowable tells whether the leader cannot know of a resource, so that
// no rule can hold it to it: its kind has been forbidden to the controller
// since before the leader started (none of its informers ever listed it),
// and no NodeHealthCheck's status records it (its NodeHealthCheck was
// deleted, or the status write was lost in a crash). decisions.md ("What
// cannot be read holds its nodes") names this limit; seeds 110999 and
// 3848 (FOCUS=control-plane) found it.
func (c *checker) unknowable(r remediationObj) bool {
	since, forbidden := c.forbiddenSince[Kind(strings.TrimSuffix(r.obj.GetKind(), "Remediation"))]
	if !forbidden || !since.Before(c.leaderStarted) {
		return false
	}
	for _, nhc := range c.allNHCs() {
		for _, entry := range nhc.Status.UnhealthyNodes {
			for _, rem := range entry.Remediations {
				if rem != nil && rem.Resource.Kind == r.obj.GetKind() && rem.Resource.Name == r.obj.GetName() {
					return false
				}
			}
		}
	}
	return true
}

// stillControlPlane tells whether a node with a control-plane remediation
// is a control-plane node still, or is gone: one demoted meanwhile is no
// longer a member quorum counts (decisions.md, "What cannot be read holds
// its nodes": a recorded remediation counts for quorum by the node's role).
func (c *checker) stillControlPlane(name string) bool {
	node := c.nodeAt(name, time.Now())
	return node == nil || v1alpha1.IsControlPlane(labels.Set(node.Labels))
}

func describe(obj *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// write hears of every write the controller's requests made: a remediation
// resource may be created only for a node that its NodeHealthCheck's
// conditions hold for, at the API server, when the request arrived.
func (c *checker) write(call *call, resp *http.Response) {
	if call.r.verb != "create" || !isRemediation(call.r.gvr) || resp.StatusCode != http.StatusCreated {
		return
	}
	obj, err := c.s.server.store.get(call.r.gvr, call.r.namespace, nameOf(call))
	if err != nil {
		return
	}
	r := resourceOf(obj)
	node, nhc := c.nodeAt(r.node, call.arrived), c.nhcAt(r.ownerName, call.arrived)
	switch {
	case node == nil:
		c.fail(InvHealthyAtCreate, "%s created for node %s, which did not exist", describe(obj), r.node)
	case nhc == nil:
	case !conditionsExpired(nhc, node, call.arrived):
		c.fail(InvHealthyAtCreate, "%s created for node %s, whose conditions %s did not hold for NodeHealthCheck %s's durations", describe(obj), r.node, conditionsOf(node), nhc.Name)
	}
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
// tries again before its create (seed 140719: the next step's lease, taken
// while answers were lost, was judged a renewal with nothing running). A
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

// conditionsExpired tells whether one of a NodeHealthCheck's unhealthy
// conditions has held on the node for its duration (a second of slack for
// the truncation of transition times).
func conditionsExpired(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node, t time.Time) bool {
	expired, _ := conditionsHold(nhc, node, t)
	return expired
}

// conditionsHold tells whether one of the unhealthy conditions holds on
// the node (matching), and whether one has for its duration (expired).
func conditionsHold(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node, t time.Time) (expired, matching bool) {
	for _, uc := range nhc.Spec.UnhealthyConditions {
		for _, nc := range node.Status.Conditions {
			if nc.Type == uc.Type && nc.Status == uc.Status {
				matching = true
				if !t.Add(time.Second).Before(nc.LastTransitionTime.Add(uc.Duration.Duration)) {
					expired = true
				}
			}
		}
	}
	return expired, matching
}

func conditionsOf(node *corev1.Node) string {
	var s []string
	for _, nc := range node.Status.Conditions {
		s = append(s, fmt.Sprintf("%s=%s since %s", nc.Type, nc.Status, nc.LastTransitionTime.Format("15:04:05")))
	}
	return fmt.Sprint(s)
}

func selects(nhc *v1alpha1.NodeHealthCheck, node *corev1.Node) bool {
	selector, err := metav1.LabelSelectorAsSelector(&nhc.Spec.Selector)
	return err == nil && selector.Matches(labels.Set(node.Labels))
}

func excluded(node *corev1.Node) bool {
	return node.Labels[v1alpha1.ExcludeFromRemediationLabel] == "true"
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
