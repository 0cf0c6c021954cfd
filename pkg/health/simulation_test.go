package health

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// simulation applies decisions the way the controller does, so that tests
// can drive a NodeHealthCheck through a sequence of node changes. Deleted
// resources disappear at once, as without remediator finalizers.
type simulation struct {
	nhc       *v1alpha1.NodeHealthCheck
	nodes     []*nodeview.Node
	resources map[string][]Remediation
	clock     time.Time
	created   int
	// lastInput is the input of the last evaluation.
	lastInput Input
	// lastStatus is the status before the last evaluation, to simulate a
	// lost status write.
	lastStatus v1alpha1.NodeHealthCheckStatus
	// finalizers holds deleted resources as being deleted, as a
	// remediator's finalizer does, until finishDeletions.
	finalizers bool
}

func newSimulation(nhc *v1alpha1.NodeHealthCheck, nodeCount int) *simulation {
	s := &simulation{nhc: nhc, resources: map[string][]Remediation{}, clock: now}
	for i := range nodeCount {
		s.nodes = append(s.nodes, testNode(fmt.Sprintf("node-%02d", i)))
	}
	return s
}

func (s *simulation) node(name string) *nodeview.Node {
	for _, n := range s.nodes {
		if n.Name == name {
			return n
		}
	}
	panic("no node " + name)
}

// setReady sets a node's Ready condition, as of `ago` before the clock.
func (s *simulation) setReady(name string, status corev1.ConditionStatus, ago time.Duration) {
	n := s.node(name).DeepCopy()
	n.Conditions = []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, status, s.clock.Add(-ago))}
	s.nodes[slices.Index(s.nodes, s.node(name))] = n
}

// fail makes nodes unhealthy for longer than their condition's duration.
func (s *simulation) fail(names ...string) {
	for _, name := range names {
		s.setReady(name, corev1.ConditionFalse, time.Hour)
	}
}

// recover makes nodes Ready again.
func (s *simulation) recover(names ...string) {
	for _, name := range names {
		s.setReady(name, corev1.ConditionTrue, 0)
	}
}

// confirm annotates a node as manually confirmed healthy.
func (s *simulation) confirm(name string) {
	n := s.node(name).DeepCopy()
	n.Annotations = maps.Clone(n.Annotations)
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = "true"
	s.nodes[slices.Index(s.nodes, s.node(name))] = n
}

func (s *simulation) advance(d time.Duration) { s.clock = s.clock.Add(d) }

// evaluate evaluates and applies the decision.
func (s *simulation) evaluate() result {
	// The input keeps its own copy: the status is built from it after the
	// simulation changes the resources.
	resources := make(map[string][]Remediation, len(s.resources))
	for node, list := range s.resources {
		resources[node] = slices.Clone(list)
	}
	s.lastInput = Input{NHC: s.nhc, Nodes: s.nodes, Remediations: resources, Now: s.clock}
	if diff := quietDifference(s.lastInput); diff != "" {
		panic(diff)
	}
	d := decide(s.lastInput)
	for _, del := range d.Delete {
		s.remove(del.Node, del.Resource.UID)
	}
	for _, to := range d.TimeOut {
		for i := range s.resources[to.Node] {
			if r := &s.resources[to.Node][i]; r.Ref.UID == to.Resource.UID && to.Annotate {
				r.TimedOut = s.clock
			}
		}
	}
	for _, mark := range d.StartHealthyDelay {
		s.setOnResource(mark.Resource.UID, func(r *Remediation) { r.HealthyDelayStart = mark.Start })
	}
	for _, ref := range d.ClearHealthyDelay {
		s.setOnResource(ref.UID, func(r *Remediation) { r.HealthyDelayStart = time.Time{} })
	}
	for _, node := range d.RemoveConfirmation {
		n := s.node(node).DeepCopy()
		delete(n.Annotations, v1alpha1.ManuallyConfirmedHealthyAnnotation)
		s.nodes[slices.Index(s.nodes, s.node(node))] = n
	}
	for _, c := range d.Create {
		s.created++
		ref := corev1.ObjectReference{
			APIVersion: c.Template.APIVersion, Kind: RemediationKind(c.Template.Kind), Namespace: c.Template.Namespace,
			Name: fmt.Sprintf("%s-%d", c.Node, s.created), UID: types.UID(fmt.Sprintf("uid-%d", s.created)),
		}
		s.resources[c.Node] = append(s.resources[c.Node], Remediation{Ref: ref, TemplateName: c.Template.Name, Created: s.clock, ControlPlane: c.ControlPlane})
		d.created(c, ref, s.clock)
	}
	s.nhc = s.nhc.DeepCopy()
	s.lastStatus = s.nhc.Status
	s.nhc.Status = d.Status
	return d
}

// remove deletes a resource: at once, or, with finalizers, it is marked
// as being deleted.
func (s *simulation) remove(node string, uid types.UID) {
	if s.finalizers {
		s.setOnResource(uid, func(r *Remediation) { r.Deleting = true })
		return
	}
	s.resources[node] = slices.DeleteFunc(s.resources[node], func(r Remediation) bool { return r.Ref.UID == uid })
	if len(s.resources[node]) == 0 {
		delete(s.resources, node)
	}
}

// finishDeletions lets a node's resources being deleted go, as their
// finalizers are removed.
func (s *simulation) finishDeletions(node string) {
	s.resources[node] = slices.DeleteFunc(s.resources[node], func(r Remediation) bool { return r.Deleting })
	if len(s.resources[node]) == 0 {
		delete(s.resources, node)
	}
}

func (s *simulation) setOnResource(uid types.UID, set func(*Remediation)) {
	for node := range s.resources {
		for i := range s.resources[node] {
			if s.resources[node][i].Ref.UID == uid {
				set(&s.resources[node][i])
			}
		}
	}
}

// remediated counts the nodes with a resource.
func (s *simulation) remediated() int { return len(s.resources) }

func (s *simulation) nodeNames(from, to int) []string {
	var names []string
	for i := from; i < to; i++ {
		names = append(names, s.nodes[i].Name)
	}
	return names
}
