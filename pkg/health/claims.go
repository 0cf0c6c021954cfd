package health

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// This NodeHealthCheck's claim on the nodes it selects, weighed against the
// others' by the overlap rule (overlap.go): which of them remediates a node,
// what a status holds by its records, and the evaluation's pass over the
// shared nodes.

// RemediatorOf says which NodeHealthCheck remediates a node that this one
// selects, and whether it is this one.
func (in *Input) RemediatorOf(node string) (by Claim, self bool) {
	var selected *nodeview.Node
	if i := slices.IndexFunc(in.Nodes, func(n *nodeview.Node) bool { return n.Name == node }); i >= 0 {
		selected = in.Nodes[i]
	}
	all := append([]Claim{in.selfClaim(node, selected, statusEntry(&in.NHC.Status, node))}, in.Claims[node]...)
	i := Remediator(all)
	return all[i], i == 0
}

// selfClaim is this NodeHealthCheck's claim on a node it selects, with the
// node's entry in its status (nil when none); a nil node holds no condition.
func (in *Input) selfClaim(name string, node *nodeview.Node, entry *v1alpha1.UnhealthyNode) Claim {
	nhc := in.NHC
	resources := len(in.Remediations[name]) > 0
	return Claim{Peer: Peer{Name: nhc.Name, UID: nhc.UID, Created: nhc.CreationTimestamp.Time}, Selects: true,
		Resources: resources, Remediating: resources || HoldsOnRecord(nhc, entry),
		ConditionsHold: node != nil && conditionsHold(node, nhc.Spec.UnhealthyConditions),
		CannotAct:      CannotAct(nhc)}
}

// statusEntry is a node's entry in a status, or nil.
func statusEntry(status *v1alpha1.NodeHealthCheckStatus, node string) *v1alpha1.UnhealthyNode {
	for _, entry := range status.UnhealthyNodes {
		if entry != nil && entry.Name == node {
			return entry
		}
	}
	return nil
}

// HoldsOnRecord tells whether a NodeHealthCheck's status entry for a node
// records an incident under way (a step that never timed out, no end
// marked since) that it can go on with (CannotAct). Its step's resource may
// be gone (its remediator deleted it): the step is created again on its
// first clock, so the NodeHealthCheck still remediates the node, and no
// other one that selects it takes it over (Remediator). One that cannot act
// holds a node only by resources that exist.
func HoldsOnRecord(nhc *v1alpha1.NodeHealthCheck, entry *v1alpha1.UnhealthyNode) bool {
	if entry == nil || endedAt(entry) != nil || CannotAct(nhc) != "" {
		return false
	}
	return slices.ContainsFunc(entry.Remediations, func(rem *v1alpha1.Remediation) bool { return rem != nil && rem.TimedOut == nil })
}

// NodesHeldOnRecord are the nodes a NodeHealthCheck holds by its status
// (HoldsOnRecord).
func NodesHeldOnRecord(nhc *v1alpha1.NodeHealthCheck) []string {
	var nodes []string
	for _, entry := range nhc.Status.UnhealthyNodes {
		if entry != nil && HoldsOnRecord(nhc, entry) {
			nodes = append(nodes, entry.Name)
		}
	}
	return nodes
}

// overlaps decides which selected nodes another NodeHealthCheck remediates,
// and sums up the overlap, with an event when it starts.
func (e *evaluation) overlaps() {
	if len(e.in.Claims) == 0 {
		return
	}
	o := Overlap{ByOther: map[string]int{}}
	others := map[string]bool{}
	var all []Claim
	for i := range e.p.Nodes {
		v := &e.p.Nodes[i]
		claims := e.in.Claims[v.Node.Name]
		if len(claims) == 0 {
			continue
		}
		all = append(append(all[:0], e.in.selfClaim(v.Node.Name, v.Node, e.previous[v.Node.Name])), claims...)
		winner := Remediator(all)
		if winner > 0 {
			by := all[winner]
			v.RemediatedBy = &by
		}
		shared := false
		for _, c := range claims {
			if c.Selects {
				shared, others[c.Name] = true, true
			}
		}
		switch {
		case !shared:
		case winner == 0:
			o.Shared++
			o.Self++
		default:
			o.Shared++
			o.ByOther[all[winner].Name]++
		}
	}
	if o.Shared == 0 {
		return
	}
	o.Others = slices.Sorted(maps.Keys(others))
	e.p.Overlap = &o
	if was := meta.FindStatusCondition(e.in.NHC.Status.Conditions, v1alpha1.ConditionNodesOverlap); was == nil || was.Status != metav1.ConditionTrue {
		e.p.Events = append(e.p.Events, warning(EventNodesOverlap, "", o.message()))
	}
}
