package remediation

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
	owners map[string][]Owner
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
					s.owners = map[string][]Owner{}
				}
				s.owners[node] = append(s.owners[node], owner)
			}
		}
	}
	return s
}

// without drops the owners that are a NodeHealthCheck of a name but one of
// its UIDs: it was deleted, and the garbage collector deletes its
// resources. A control-plane node no other owner holds is dropped too.
func (s shown) without(name string, keep types.UID) shown {
	var out shown
	for node, owners := range s.owners {
		kept := slices.DeleteFunc(slices.Clone(owners), func(o Owner) bool { return o.Name == name && o.UID != keep })
		if len(kept) > 0 {
			if out.owners == nil {
				out.owners = map[string][]Owner{}
			}
			out.owners[node] = kept
		}
	}
	for _, node := range s.controlPlane {
		if _, owned := s.owners[node]; !owned || len(out.owners[node]) > 0 {
			out.controlPlane = append(out.controlPlane, node)
		}
	}
	return out
}

// ownersByNode returns the NodeHealthChecks owning the resources of a cache,
// by node, through its node index.
func ownersByNode(indexer cache.Indexer) map[string][]Owner {
	var owners map[string][]Owner
	for _, node := range indexer.ListIndexFuncValues(nodeIndex) {
		objs, _ := indexer.ByIndex(nodeIndex, node)
		for _, obj := range objs {
			for _, owner := range Owners(obj.(*unstructured.Unstructured)) {
				if slices.Contains(owners[node], owner) {
					continue
				}
				if owners == nil {
					owners = map[string][]Owner{}
				}
				owners[node] = append(owners[node], owner)
			}
		}
	}
	return owners
}

// forgetOwner drops from what stopped kinds showed the resources of the
// NodeHealthChecks of a name but the one of keep (none when empty): a
// deleted NodeHealthCheck's resources are deleted by the garbage collector,
// which the controller cannot see while their kind cannot be read.
func (m *Informers) forgetOwner(name string, keep types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, s := range m.stopped {
		s.shown = s.shown.without(name, keep)
		m.stopped[gvr] = s
	}
	for _, r := range m.running {
		r.remembered = r.remembered.without(name, keep)
	}
}
