package check

import (
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/apiserver"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// The invariants checked as the controller creates remediation resources
// (the others: liveness.go, leases.go); the checker that keeps the
// history they read: checker.go.

// The invariants, by name; a failure names the one it broke. Each says the
// section of the spec it checks.
const (
	// InvOneControlPlane: one control-plane node under remediation at a
	// time (the spec's workflow: remediation of a control plane node is
	// skipped while another one's runs).
	InvOneControlPlane = "one-control-plane-node"
	// InvHealthyAtCreate: a remediation is created only for a node one of
	// whose unhealthy conditions has held for its duration, counted from
	// its lastTransitionTime (the spec's "UnhealthyConditions").
	InvHealthyAtCreate = "no-create-for-healthy-node"
	// InvOneResourceStep: one resource per node and step (the spec's
	// "Remediation Resources": it is named after the node).
	InvOneResourceStep = "one-resource-per-node-and-step"
	// InvOneNHCPerNode: one NodeHealthCheck remediates a node (the spec's
	// "Selector": configurations must not overlap; docs/remediation.md,
	// "Overlapping NodeHealthChecks").
	InvOneNHCPerNode = "one-nodehealthcheck-per-node"
	// InvLeaseWhileActing: a node lease is renewed only while a step runs
	// (docs/remediation.md, "Node leases").
	InvLeaseWhileActing = "lease-only-while-a-step-runs"
	// InvLiveness: a node that needs a remediation and that nothing
	// documented holds back gets it (the spec's "UnhealthyConditions":
	// "When they match for the time defined in duration, remediation will
	// start").
	InvLiveness = "unhealthy-node-remediated"
	// InvStatusTruthful: the status lists the remediations that exist
	// (the spec's "UnhealthyNodes").
	InvStatusTruthful = "status-shows-the-cluster"
)

// The documented bounds (docs/architecture.md, "The simulation").
const (
	// livenessBound is how long after an unhealthy condition's duration
	// passed, with nothing in the way, a node gets its resource. It is
	// shorter than the controller's retry of a wait (health.WaitRetry, a
	// minute), so a wake-up that never comes is caught, and longer than its
	// retry back-off's cap (30 s), which a sync failed before the calm may
	// still wait out.
	livenessBound = 45 * time.Second
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

// resourceCreated checks a new remediation resource against those there
// already: one control-plane node at a time, one resource per node and
// step, one NodeHealthCheck per node.
func (c *Checker) resourceCreated(obj *unstructured.Unstructured) {
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
// cannot be read holds its nodes") names this limit.
func (c *Checker) unknowable(r remediationObj) bool {
	since, forbidden := c.forbiddenSince[cluster.KindOfRemediation(r.obj.GetKind())]
	if !forbidden || !since.Before(c.leaderStarted) {
		return false
	}
	for _, nhc := range c.allNHCs() {
		for _, entry := range nhc.Status.UnhealthyNodes {
			for _, rem := range entry.Remediations {
				// Or by UID: a compacted entry names no resource.
				if rem != nil && rem.Resource.Kind == r.obj.GetKind() && (rem.Resource.Name == r.obj.GetName() || rem.Resource.UID == r.obj.GetUID()) {
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
func (c *Checker) stillControlPlane(name string) bool {
	node := c.nodeAt(name, time.Now())
	return node == nil || v1alpha1.IsControlPlane(labels.Set(node.Labels))
}

func describe(obj *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// Write hears of every write the controller's requests made (the Writes
// hook): a remediation resource may be created only for a node that its
// NodeHealthCheck's conditions hold for, at the API server, when the
// request arrived.
func (c *Checker) Write(call *apiserver.Call, resp *http.Response) {
	c.served(call)
	c.leaseServed(call)
	if call.Verb == "delete" && isRemediation(call.GVR) {
		c.deletedByController(call, resp)
		c.deleteRules(call, resp)
		c.healthyDelayRules(call, resp)
		return
	}
	if call.Verb == "create" && isRemediation(call.GVR) {
		c.repeatedCreates(call, resp)
	}
	if call.Verb != "create" || !isRemediation(call.GVR) || resp.StatusCode != http.StatusCreated {
		return
	}
	obj, err := c.store.Get(call.GVR, call.Namespace, nameOf(call))
	if err != nil {
		return
	}
	r := resourceOf(obj)
	if k, ok := cluster.KindOf(call.GVR); ok {
		c.answered(call.Client, k, r)
	}
	node, nhc := c.nodeAt(r.node, call.Arrived), c.nhcAt(r.ownerName, call.Arrived)
	switch {
	case node == nil:
		c.fail(InvHealthyAtCreate, "%s created for node %s, which did not exist", describe(obj), r.node)
	case nhc == nil:
	case !conditionsExpired(nhc, node, call.Arrived):
		c.fail(InvHealthyAtCreate, "%s created for node %s, whose conditions %s did not hold for NodeHealthCheck %s's durations", describe(obj), r.node, conditionsOf(node), nhc.Name)
	default:
		c.createRules(call, obj, r)
	}
}

// conditionsExpired tells whether one of a NodeHealthCheck's unhealthy
// conditions has held on the node for its duration: from its
// lastTransitionTime plus its duration on, that instant included (the
// spec's UnhealthyConditions; docs/decisions.md, "Deadlines are
// inclusive").
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
				if !t.Before(nc.LastTransitionTime.Add(uc.Duration.Duration)) {
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
