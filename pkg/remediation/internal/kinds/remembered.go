package kinds

import (
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// shown is what a kind's cache showed of the nodes under remediation when
// its informer stopped for a lasting error (forbidden, no longer served).
// It stands for the kind until a retry syncs: a remediator whose role was
// removed may still be rebooting or fencing those nodes, so they stay busy
// for quorum and for every other NodeHealthCheck.
type shown struct {
	// controlPlane are the control-plane nodes with a remediation resource
	// of the kind, whoever owns it.
	controlPlane []string
	// owners are the NodeHealthChecks owning resources of the kind, by node.
	owners map[string][]resource.Owner
}

// shows is what a running informer's cache shows now; before a retry has
// synced, with what the kind showed when it stopped.
func (r *runningInformer) shows() shown {
	indexer := r.informer.GetIndexer()
	s := shown{
		controlPlane: indexer.ListIndexFuncValues(controlPlaneIndex),
		owners:       ownersByNode(indexer),
	}
	if !r.informer.HasSynced() {
		s = s.with(r.remembered)
	}
	return s
}

// empty tells whether nothing was shown.
func (s shown) empty() bool { return len(s.controlPlane) == 0 && len(s.owners) == 0 }

// with adds what an earlier stop showed.
func (s shown) with(earlier shown) shown {
	for _, node := range earlier.controlPlane {
		if !slices.Contains(s.controlPlane, node) {
			s.controlPlane = append(s.controlPlane, node)
		}
	}
	for node, owners := range earlier.owners {
		for _, owner := range owners {
			if !slices.Contains(s.owners[node], owner) {
				if s.owners == nil {
					s.owners = map[string][]resource.Owner{}
				}
				s.owners[node] = append(s.owners[node], owner)
			}
		}
	}
	return s
}

// ownersByNode returns the NodeHealthChecks owning the resources of a cache,
// by node.
func ownersByNode(indexer cache.Indexer) map[string][]resource.Owner {
	var owners map[string][]resource.Owner
	eachOwnerIn(indexer, func(node string, owner resource.Owner) {
		if slices.Contains(owners[node], owner) {
			return
		}
		if owners == nil {
			owners = map[string][]resource.Owner{}
		}
		owners[node] = append(owners[node], owner)
	})
	return owners
}

// eachOwnerIn calls add with every node and NodeHealthCheck owning a
// resource of it in a cache, through its node index: the cache also holds
// the shells of resources no NodeHealthCheck owns.
func eachOwnerIn(indexer cache.Indexer, add func(node string, owner resource.Owner)) {
	for _, node := range indexer.ListIndexFuncValues(nodeIndex) {
		objs, _ := indexer.ByIndex(nodeIndex, node)
		for _, obj := range objs {
			resource.EachOwner(obj.(*unstructured.Unstructured), func(owner resource.Owner) bool {
				add(node, owner)
				return true
			})
		}
	}
}
