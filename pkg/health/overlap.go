package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// Overlapping NodeHealthChecks. The spec says that two NodeHealthChecks must
// not select the same node; when they do, one rule (Remediator) says which
// of them remediates it, the others leave the node alone, and each reports
// the overlap. This NodeHealthCheck's own claim is weighed in claims.go.

// The words of an overlap, for the NodesOverlap condition and event; why a
// node waits for another NodeHealthCheck is said in waits.go.
const (
	messageNodesOverlap = "%d selected nodes are also selected by NodeHealthChecks %s; only one NodeHealthCheck remediates a node, " +
		"the one already remediating it, else one that can act (not disabled, paused or deleting), the oldest whose unhealthy conditions hold on it: %s. Make the selectors disjoint"
	messageRemediatesSelf  = "this one remediates %d"
	messageRemediatesOther = "%s remediates %d"

	// maxNamed bounds the NodeHealthChecks a message names.
	maxNamed = 10
)

// Peer is another NodeHealthCheck, as the overlap rule sees it.
type Peer struct {
	Name string
	UID  types.UID
	// Created is its creationTimestamp; zero when it is not known (its
	// resources outlived it).
	Created time.Time
}

// SelectingPeer is another NodeHealthCheck with its parsed selector.
type SelectingPeer struct {
	Peer
	Selector labels.Selector
	// Unknown is true while remediation resources cannot all be known yet
	// (after a start, until the kinds of every NodeHealthCheck are watched
	// and synced): it may be remediating any node it selects. A bounded
	// window, never a lasting state of the peer's own.
	Unknown bool
	// Conditions are its unhealthy conditions.
	Conditions []v1alpha1.UnhealthyCondition
	// CannotAct is CannotAct of the NodeHealthCheck as last read.
	CannotAct string
}

// Claim is a NodeHealthCheck's claim on a node: it selects the node, has
// remediation resources for it, or both.
type Claim struct {
	Peer
	Selects bool
	// Resources is true when it has remediation resources for the node, or
	// may have because they cannot be known yet.
	Resources bool
	// Remediating is true with Resources, or when its status records a
	// step under way for the node whose resource is gone (HoldsOnRecord).
	Remediating bool
	// ConditionsHold is true when one of its unhealthy conditions matches
	// the node now, whether its duration has passed or not: it would act.
	ConditionsHold bool
	// CannotAct says why it cannot act on the node (CannotAct); "" when it can.
	CannotAct string
}

// Why a NodeHealthCheck cannot act, for the overlap rule: what its object
// shows, the same to every NodeHealthCheck and to kubectl nhc.
const (
	cannotActDeleting = "being deleted"
	cannotActDisabled = "disabled"
	cannotActPaused   = "paused"
)

// CannotAct says why a NodeHealthCheck cannot remediate a node now, from
// the object alone: it is being deleted, its status's Disabled condition is
// True (a template missing or forbidden, a kind no longer served), or its
// spec has pause requests; "" when it can.
func CannotAct(nhc *v1alpha1.NodeHealthCheck) string {
	switch {
	case nhc.DeletionTimestamp != nil:
		return cannotActDeleting
	case meta.IsStatusConditionTrue(nhc.Status.Conditions, v1alpha1.ConditionDisabled):
		return cannotActDisabled
	case len(nhc.Spec.PauseRequests) > 0:
		return cannotActPaused
	}
	return ""
}

// Remediator returns the index of the claim whose NodeHealthCheck
// remediates the node, or -1 when there is none. It is the one that has
// remediation resources for the node already (a selector changed during its
// remediation: never two remediations for one node), else one whose status
// records a step under way for it (its resource gone, to be created again:
// beside another's resources it would be a second remediation), else one that can act
// before one that cannot (a disabled, paused or deleting one would leave
// the node unremediated), else the oldest whose unhealthy conditions hold on
// the node (an older one that checks other conditions would never act),
// else the oldest, by creationTimestamp, then by name. Timing decides
// nothing, so every NodeHealthCheck that claims the node, and kubectl nhc,
// pick the same one from the same objects.
func Remediator(claims []Claim) int {
	best := -1
	for i := range claims {
		if best < 0 || remediatesFirst(&claims[i], &claims[best]) {
			best = i
		}
	}
	return best
}

func remediatesFirst(a, b *Claim) bool {
	switch {
	case a.Resources != b.Resources:
		return a.Resources
	case a.Remediating != b.Remediating:
		return a.Remediating
	case !a.Remediating && (a.CannotAct == "") != (b.CannotAct == ""):
		return a.CannotAct == ""
	case !a.Remediating && a.ConditionsHold != b.ConditionsHold:
		return a.ConditionsHold
	case !a.Created.Equal(b.Created):
		return a.Created.Before(b.Created)
	case a.Name != b.Name:
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// ClaimsOn finds, by node, the claims of other NodeHealthChecks on nodes:
// the peers whose selector matches a node; owners, the other
// NodeHealthChecks with remediation resources for a node, by node; and
// holding, those whose status records a step under way for it
// (HoldsOnRecord), by node.
func ClaimsOn(nodes []*nodeview.Node, peers []SelectingPeer, owners, holding map[string][]Peer) map[string][]Claim {
	if len(peers) == 0 && len(owners) == 0 && len(holding) == 0 {
		// Disjoint NodeHealthChecks, the usual case: no pass over the nodes,
		// which at thousands of nodes is mostly cache misses.
		return nil
	}
	var claims map[string][]Claim
	// The claims of all nodes share one backing array: thousands of nodes
	// selected by several NodeHealthChecks make few allocations.
	var buf []Claim
	for _, node := range nodes {
		start := len(buf)
		for i := range peers {
			if peers[i].Selector != nil && peers[i].Selector.Matches(node.Labels) {
				buf = append(buf, Claim{Peer: peers[i].Peer, Selects: true, Resources: peers[i].Unknown, Remediating: peers[i].Unknown,
					ConditionsHold: conditionsHold(node, peers[i].Conditions), CannotAct: peers[i].CannotAct})
			}
		}
		for _, resources := range []bool{true, false} {
			holders := holding[node.Name]
			if resources {
				holders = owners[node.Name]
			}
			for _, owner := range holders {
				i := slices.IndexFunc(buf[start:], func(c Claim) bool { return c.UID == owner.UID })
				if i < 0 {
					buf, i = append(buf, Claim{Peer: owner}), len(buf)-start
				}
				c := &buf[start+i]
				c.Resources, c.Remediating = c.Resources || resources, true
			}
		}
		if len(buf) > start {
			if claims == nil {
				claims = map[string][]Claim{}
			}
			claims[node.Name] = buf[start:len(buf):len(buf)]
		}
	}
	return claims
}

// Overlap sums up the selected nodes that other NodeHealthChecks select too.
type Overlap struct {
	// Shared is the number of such nodes.
	Shared int
	// Others are the NodeHealthChecks that select some of them, by name.
	Others []string
	// Self is how many of them this NodeHealthCheck remediates, and ByOther
	// how many each other NodeHealthCheck remediates, by name.
	Self    int
	ByOther map[string]int
}

// message says who shares nodes with this NodeHealthCheck and who
// remediates them, naming at most maxNamed NodeHealthChecks each time.
func (o *Overlap) message() string {
	parts := []string{fmt.Sprintf(messageRemediatesSelf, o.Self)}
	for _, name := range o.Others {
		if n := o.ByOther[name]; n > 0 {
			parts = append(parts, fmt.Sprintf(messageRemediatesOther, name, n))
		}
	}
	// Owners of leftover resources remediate shared nodes without selecting them.
	for _, name := range slices.Sorted(maps.Keys(o.ByOther)) {
		if !slices.Contains(o.Others, name) {
			parts = append(parts, fmt.Sprintf(messageRemediatesOther, name, o.ByOther[name]))
		}
	}
	return fmt.Sprintf(messageNodesOverlap, o.Shared, bounded(o.Others), bounded(parts))
}

// bounded joins at most maxNamed items, and says how many more there are.
func bounded(items []string) string {
	if len(items) <= maxNamed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxNamed], ", "), len(items)-maxNamed)
}
