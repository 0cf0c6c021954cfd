package health

import (
	"slices"
	"strings"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// The status must stay far below etcd's object limit (1.5 MiB) together with
// the spec and metadata, however many nodes fail: a status that cannot be
// written loses the controller's memory. These bounds keep it under about
// 400 KiB.
const (
	// MaxListedNodes bounds status.unhealthyNodes (the CRD's maxItems).
	MaxListedNodes = 5000
	// MaxListedRemediations bounds an entry's remediations (the CRD's
	// maxItems): the newest are kept.
	MaxListedRemediations = 32
	// listedNodesBudget bounds the estimated bytes of unhealthyNodes and
	// inFlightRemediations together.
	listedNodesBudget = 384 << 10
)

// bound keeps the entries that fit the bounds: nodes under remediation
// first, then the others (unhealthy, waiting), each group by name. The
// counters and the reason still count every node.
func bound(entries []*v1alpha1.UnhealthyNode) (listed []*v1alpha1.UnhealthyNode, unlisted int) {
	for _, entry := range entries {
		if n := len(entry.Remediations); n > MaxListedRemediations {
			entry.Remediations = entry.Remediations[n-MaxListedRemediations:]
		}
	}
	ordered := slices.Clone(entries)
	slices.SortStableFunc(ordered, func(a, b *v1alpha1.UnhealthyNode) int {
		return boolOrder(len(b.Remediations) > 0, len(a.Remediations) > 0)
	})
	size := 0
	for _, entry := range ordered {
		size += entrySize(entry)
		if len(listed) == MaxListedNodes || size > listedNodesBudget {
			break
		}
		listed = append(listed, entry)
	}
	slices.SortFunc(listed, func(a, b *v1alpha1.UnhealthyNode) int { return strings.Compare(a.Name, b.Name) })
	return listed, len(entries) - len(listed)
}

// entrySize estimates an entry's bytes in JSON, with its
// inFlightRemediations item.
func entrySize(entry *v1alpha1.UnhealthyNode) int {
	size := len(entry.Name) + 20
	if len(entry.Remediations) > 0 {
		size += len(entry.Name) + 40
	}
	for _, rem := range entry.Remediations {
		r := &rem.Resource
		size += len(r.APIVersion) + len(r.Kind) + len(r.Namespace) + len(r.Name) + len(r.UID) + len(rem.TemplateName) + 140
	}
	return size
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
