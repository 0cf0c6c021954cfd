package gather

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Seen is what a NodeHealthCheck's decision reads of remediation
// resources and of the writes under way: pkg/gather gathers it, with the
// nodes and the other NodeHealthChecks, into the decision's input.
type Seen struct {
	// Ready is false while an informer the NodeHealthCheck needs, or the
	// node leases' cache, has not synced: decide later.
	Ready bool
	// Problem, when set, is why the templates or the kinds of the
	// remediation resources cannot be used.
	Problem *health.Problem
	// RefreshAfter, when set, is how soon to read again: a template read
	// with GET expires, a kind not served is looked up again, a stopped
	// informer is tried again, a write the informers have not shown lapses
	// and is looked up. None of these comes with an event.
	RefreshAfter time.Duration
	// Remediations are the NodeHealthCheck's resources by node.
	Remediations map[string][]health.Remediation
	// Pending are the nodes with a write of this controller that the
	// informers do not show yet: they get no new action until it shows.
	// Those of an earlier NodeHealthCheck of this name count too.
	Pending map[string]bool
	// OwnWritePending is true while a write of this NodeHealthCheck, not
	// of an earlier one of its name, is among them.
	OwnWritePending bool
	// OtherOwners are, by node, the other NodeHealthChecks with remediation
	// resources for it, of any kind watched.
	OtherOwners map[string][]resource.Owner
	// ControlPlane are the control-plane nodes with a remediation resource
	// of any owner, of any kind some NodeHealthCheck uses, or as a kind
	// stopped for a lasting error last showed it.
	ControlPlane []string
	// Reserved are the nodes whose create under way holds the cluster's
	// one control-plane slot.
	Reserved []string
	// ControlPlaneUnknown, when set, is why ControlPlane may be incomplete.
	ControlPlaneUnknown string
	// Unreadable are the kinds, of those the statuses of the other
	// NodeHealthChecks record, whose resources cannot be known now.
	Unreadable map[schema.GroupVersionKind]bool
	// Leases are the node leases; nil when the controller takes none.
	Leases *health.Leases
}
