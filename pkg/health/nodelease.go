package health

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Node leases: before it remediates a node, a NodeHealthCheck takes the
// node's coordination.k8s.io Lease, which other medik8s operators
// (node-maintenance-operator, upstream's NodeHealthCheck) take too, so that
// no two of them act on one node at once. The names, holder identities and
// durations are upstream's, so that they understand each other.
const (
	// DefaultLeaseDuration is how long a remediation without an escalation
	// timeout (remediationTemplate) holds its node's lease: upstream's
	// DefaultRemediationDuration. An escalation step holds it for its timeout.
	DefaultLeaseDuration = 10 * time.Minute
	// DefaultLeaseBuffer is added to every lease duration: upstream's LeaseBuffer.
	DefaultLeaseBuffer = time.Minute
	// leaseOverdueFactor: a step's lease is overdue after this many of its
	// durations (upstream extends a lease at most twice).
	leaseOverdueFactor = 3
	// leaseHolderPrefix makes a NodeHealthCheck's holder identity, as upstream does.
	leaseHolderPrefix = "NodeHealthCheck-"
	// leaseNamePrefix makes a node's lease name: upstream's lower-cased "<Kind>-<name>".
	leaseNamePrefix = "node-"
)

// LeaseHolder is the holder identity of a NodeHealthCheck's node leases.
func LeaseHolder(nhc string) string {
	return leaseHolderPrefix + nhc
}

// LeaseHolderNHC is the NodeHealthCheck a holder identity names, if it
// names one.
func LeaseHolderNHC(holder string) (string, bool) {
	return strings.CutPrefix(holder, leaseHolderPrefix)
}

// leaseNameHashLength is the number of hex digits that stand for the end of
// a node name too long for its lease's name.
const leaseNameHashLength = 10

// LeaseName is the name of a node's lease: upstream's "node-<name>", or,
// where that would be longer than an object name may be (a node name of
// over 248 characters), its first part and a hash of the whole node name,
// as Kubernetes names what it derives from long names.
func LeaseName(node string) string {
	name := strings.ToLower(leaseNamePrefix + node)
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(node))
	suffix := "-" + hex.EncodeToString(sum[:])[:leaseNameHashLength]
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(suffix)], ".-") + suffix
}

// LeaseNode is the node a node lease is for. owner is the name of the Node
// that owns the lease, "" without: it says which node a lease whose name was
// shortened is for. A lease not named after a node is none.
func LeaseNode(leaseName, owner string) (string, bool) {
	if owner != "" && LeaseName(owner) == leaseName {
		return owner, true
	}
	return strings.CutPrefix(leaseName, leaseNamePrefix)
}

// NodeLease is a node's lease, as far as decisions go.
type NodeLease struct {
	// Holder is the lease's holderIdentity.
	Holder string
	// Acquired is the lease's acquireTime; zero when unset.
	Acquired time.Time
	// Renewed is the lease's renewTime; zero when unset.
	Renewed time.Time
	// Duration is the lease's leaseDurationSeconds.
	Duration time.Duration
}

// Expires is when the lease ends unless it is renewed.
func (l NodeLease) Expires() time.Time {
	return l.Renewed.Add(l.Duration)
}

// HeldAt says whether the lease is in force. Unlike upstream, a renew time
// ahead of our clock counts as in force: clock skew must not let a holder's
// lease be taken over.
func (l NodeLease) HeldAt(now time.Time) bool {
	return l.Holder != "" && now.Before(l.Expires())
}

// Leases is what Evaluate needs to know of node leases. A nil *Leases in the
// input takes none: the controller was told not to use them.
type Leases struct {
	// ByNode are the node leases of the lease namespace, by node name.
	ByNode map[string]NodeLease
	// Duration is how long a remediation without a timeout holds its lease,
	// before the buffer: DefaultLeaseDuration unless configured.
	Duration time.Duration
	// Buffer is added to every lease duration: DefaultLeaseBuffer unless configured.
	Buffer time.Duration
}

// HeldBy lists, sorted, the nodes whose lease a holder holds, in force or
// ended; none for nil.
func (l *Leases) HeldBy(holder string) []string {
	if l == nil {
		return nil
	}
	var nodes []string
	for node, lease := range l.ByNode {
		if lease.Holder == holder {
			nodes = append(nodes, node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// LeaseRequest is a node lease to take or to renew for this NodeHealthCheck.
type LeaseRequest struct {
	Node string
	// NodeUID makes the lease owned by its node, so that it goes with it.
	NodeUID types.UID
	// Holder is the NodeHealthCheck's holder identity.
	Holder string
	// Duration is the lease duration to write.
	Duration time.Duration
	// Restart takes the lease anew, from now: for a first resource, or after
	// the step before this one gave up because its lease was overdue.
	Restart bool
}

// LeasesLeft are the nodes whose lease a deleted NodeHealthCheck (holder)
// still holds with nothing of it left on them: none of busy, the nodes
// with a remediation resource of any NodeHealthCheck or a create of its
// own under way. They are released, where upstream leaves them to run out:
// up to 11 minutes in which no other NodeHealthCheck may remediate the
// node. A lease of a node that is busy stays until its resources are gone.
func LeasesLeft(holder string, leases *Leases, busy map[string]bool) []string {
	var left []string
	for _, node := range leases.HeldBy(holder) {
		if !busy[node] {
			left = append(left, node)
		}
	}
	return left
}
