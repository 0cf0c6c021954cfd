// Package gather gathers what a NodeHealthCheck's decision sees
// (health.Input) from a Source: the controller's caches for a sync, or
// kubectl nhc's one-shot listing, so that both see one picture of the
// cluster by one set of rules. It sends nothing itself.
package gather

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Source is where a decision's picture of the cluster is read.
type Source interface {
	// Others lists the NodeHealthChecks but nhc, as decisions see them.
	Others(nhc *v1alpha1.NodeHealthCheck) []*v1alpha1.NodeHealthCheck
	// Peers lists the other NodeHealthChecks whose selector may match a
	// node nhc selects, with their parsed selectors.
	Peers(nhc *v1alpha1.NodeHealthCheck) []health.SelectingPeer
	// Remediations reads what nhc's remediation resources, and the writes
	// under way, show.
	Remediations(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (Seen, error)
	// Selected selects the nodes a valid selector of nhc matches. It may
	// leave out of the selection's nodes, and count as quiet, the nodes
	// leaveOut calls quiet and does not name; nil leaves out none.
	Selected(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, selector labels.Selector, leaveOut *LeaveOut) (Selection, error)
	// Node reads a node; a NotFound error when it is gone.
	Node(name string) (*nodeview.Node, error)
}

// Gathered is what a decision sees, with what tells when to look again.
type Gathered struct {
	health.Input
	// RefreshAfter, when set, is how soon the picture may change without
	// an event (Seen.RefreshAfter).
	RefreshAfter time.Duration
	// Behind is true while the nodes cannot be known yet (Source.Selected):
	// Input has none, and no decision is to be made.
	Behind bool
	// OwnWritePending is true while a write of this NodeHealthCheck is
	// under way (Seen.OwnWritePending), for
	// health.GuardedCreations.
	OwnWritePending bool
}

// Gather gathers what a NodeHealthCheck's decision sees at now: its
// remediation resources and writes under way, the control-plane nodes under
// remediation and the holders of each node, and, once the resources are
// known, its selected and deleted nodes and the other NodeHealthChecks'
// claims on them. The caller adds what only it knows: the bounds of its
// creates (health.GuardedCreations) and of its status.
func Gather(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, src Source, now time.Time) (Gathered, error) {
	others := src.Others(nhc)
	seen, err := src.Remediations(ctx, nhc)
	if err != nil {
		return Gathered{}, fmt.Errorf("reading remediation resources: %w", err)
	}
	// Parsed once: the node listing, Evaluate and the confirmation of each
	// create use it. An invalid one is nil, and Evaluate reports it.
	selector, _ := health.ParseSelector(&nhc.Spec.Selector)
	h := holdersOf(others, &seen, src)
	g := Gathered{RefreshAfter: seen.RefreshAfter, OwnWritePending: seen.OwnWritePending, Input: health.Input{
		NHC: nhc, Selector: selector, Now: now,
		Remediations: seen.Remediations, PendingNodes: seen.Pending, Leases: seen.Leases,
		RemediationProblem: seen.Problem, ResourcesUnknown: !seen.Ready,
		BusyControlPlaneNodes: h.busyControlPlane, ControlPlaneUnknown: seen.ControlPlaneUnknown,
	}}
	if !seen.Ready {
		return g, nil
	}
	peers := src.Peers(nhc)
	sel, err := selected(ctx, nhc, selector, seen.Remediations, src, leaveOutOf(&g.Input, peers, h))
	if err != nil || !sel.CaughtUp {
		g.Behind = !sel.CaughtUp
		return g, err
	}
	g.Nodes, g.QuietNodes = sel.Nodes, sel.Quiet
	g.DeletedNodes = deletedNodes(nhc, seen.Remediations, src)
	g.Claims = claims(sel.Nodes, others, peers, h, seen.ControlPlaneUnknown != "")
	return g, nil
}

// selected lists the nodes the selector matches. An invalid selector (nil:
// stored before validation could catch it, and reported by Evaluate)
// selects the nodes under remediation, so that their resources are not
// taken for orphans.
func selected(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, selector labels.Selector, remediations map[string][]health.Remediation, src Source, leaveOut *LeaveOut) (Selection, error) {
	if selector != nil {
		return src.Selected(ctx, nhc, selector, leaveOut)
	}
	sel := Selection{CaughtUp: true}
	for name := range remediations {
		if node, err := src.Node(name); err == nil {
			sel.Nodes = append(sel.Nodes, node)
		}
	}
	return sel, nil
}

// deletedNodes are the nodes with remediation resources or an ongoing
// remediation on record whose Node object is gone, for the history.
func deletedNodes(nhc *v1alpha1.NodeHealthCheck, remediations map[string][]health.Remediation, src Source) map[string]bool {
	var deleted map[string]bool
	check := func(name string) {
		if gone(name, src) {
			if deleted == nil {
				deleted = map[string]bool{}
			}
			deleted[name] = true
		}
	}
	for name := range remediations {
		check(name)
	}
	for i := range nhc.Status.RemediationHistory {
		if r := &nhc.Status.RemediationHistory[i]; r.Finished == nil {
			check(r.TargetName)
		}
	}
	return deleted
}
