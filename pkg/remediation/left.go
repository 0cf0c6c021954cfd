package remediation

import (
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Left is what may still hold the nodes of a deleted NodeHealthCheck.
type Left struct {
	// Known is false while the leases' cache has not synced, the kinds
	// that may hold remediation resources were not all looked at (WatchAll),
	// or one of them cannot be read: nothing can be released then.
	Known bool
	// Leases are the node leases; nil while their cache has not synced.
	Leases *health.Leases
	// Busy are the nodes of its leases that a remediation resource of any
	// NodeHealthCheck holds, in the caches or as a kind that cannot be read
	// showed it last, or that a create of its own under way may hold.
	Busy map[string]bool
}

// WatchLeft reads, from the caches, what may still hold the nodes whose
// lease a deleted NodeHealthCheck holds. Its resources go on remediating
// their nodes until they are gone (a remediator's finalizer holds them
// while it works), and so does its lease of their nodes. A kind that could
// never be read is watched again when its retry is due
// (kinds.Informers.RetryUnread), so that what it holds becomes known.
func (o *Observer) WatchLeft(nhc string) (Left, error) {
	if o.leases == nil {
		return Left{Known: true}, nil
	}
	o.informers.RetryUnread()
	leases, _, err := o.leases.Read()
	if err != nil || leases == nil || !o.everyKindWatched.Load() || !o.informers.AllRead() {
		return Left{Leases: leases}, err
	}
	left := Left{Known: true, Leases: leases, Busy: map[string]bool{}}
	holder := health.LeaseHolder(nhc)
	creating := o.ledger.Creating(nhc)
	for _, node := range leases.HeldBy(holder) {
		if creating[node] || o.informers.OtherOwner(node, "") != "" {
			left.Busy[node] = true
		}
	}
	return left, nil
}
