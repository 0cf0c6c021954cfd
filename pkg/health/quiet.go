package health

import (
	"iter"
	"strings"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// A selected node is quiet when an evaluation can do nothing with it but
// count it healthy: none of the spec's unhealthy conditions matches it, at
// any duration (so no clock makes it unhealthy), it carries no confirmation
// of health to remove, and the input names it nowhere (NamedNodes). A
// caller may leave quiet nodes out of Input.Nodes and count them in
// Input.QuietNodes: the plan, but for their verdicts, and the status are
// the same (quiet_test.go compares them). A sync then reads the nodes that
// show something, not every node its selector matches.

// Quietness tells the quiet nodes of one spec.
type Quietness struct {
	conditions []v1alpha1.UnhealthyCondition
}

// QuietnessOf is the quietness of a spec: its unhealthy conditions, the
// defaults when it has none, as Evaluate reads them.
func QuietnessOf(spec *v1alpha1.NodeHealthCheckSpec) Quietness {
	return Quietness{conditions: unhealthyConditionsOf(spec)}
}

// Quiet tells whether a node shows nothing an evaluation acts on: no
// unhealthy condition of the spec and no confirmation of health. Whether
// the input names it is the caller's to check (NamedNodes).
func (q Quietness) Quiet(node *nodeview.Node) bool {
	_, confirmed := node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation]
	return !confirmed && !conditionsHold(node, q.conditions)
}

// Key is equal for two quietnesses that tell every node alike: a change of
// the conditions' durations keeps it.
func (q Quietness) Key() string {
	var b strings.Builder
	for _, c := range q.conditions {
		b.WriteString(string(c.Type))
		b.WriteByte('=')
		b.WriteString(string(c.Status))
		b.WriteByte(';')
	}
	return b.String()
}

// NamedNodes yields the nodes an input names beside Nodes: those with
// remediation resources, writes under way, node leases or other
// NodeHealthChecks' claims, and those the status has an entry or an
// unfinished record of. An evaluation looks each of them up by name, so
// none may be left out as quiet. A name may come more than once. The
// create retries are not among them: a quiet node holds no unhealthy
// condition, so it never waits for a create.
func NamedNodes(in *Input) iter.Seq[string] {
	return func(yield func(string) bool) {
		for name := range in.Remediations {
			if !yield(name) {
				return
			}
		}
		for name := range in.PendingNodes {
			if !yield(name) {
				return
			}
		}
		if in.Leases != nil {
			for name := range in.Leases.ByNode {
				if !yield(name) {
					return
				}
			}
		}
		for name := range in.Claims {
			if !yield(name) {
				return
			}
		}
		for _, entry := range in.NHC.Status.UnhealthyNodes {
			if entry != nil && !yield(entry.Name) {
				return
			}
		}
		for i := range in.NHC.Status.RemediationHistory {
			if r := &in.NHC.Status.RemediationHistory[i]; r.Finished == nil && !yield(r.TargetName) {
				return
			}
		}
	}
}
