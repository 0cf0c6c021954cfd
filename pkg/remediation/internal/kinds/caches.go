package kinds

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Index names of the dynamic informers.
const (
	// ownerIndex keys resources by the UID of each NodeHealthCheck owning them.
	ownerIndex = "nodehealthcheck-owner"
	// controlPlaneIndex keys control-plane remediations by their node.
	controlPlaneIndex = "control-plane-node"
	// nodeIndex keys the resources NodeHealthChecks own by their node.
	nodeIndex = "nodehealthcheck-node"
)

// Get returns an object from a resource's cache, or nil. An object kept as
// a metadata shell (Keep) comes with its template not kept (KeptTemplate).
func (v View) Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	r := v.informer(gvr)
	if r == nil {
		return nil
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, exists, err := r.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil
	}
	if shell, ok := obj.(*shell); ok {
		return shell.unstructured()
	}
	return obj.(*unstructured.Unstructured)
}

// OwnedBy returns the resources a NodeHealthCheck owns, by its UID.
func (v View) OwnedBy(gvr schema.GroupVersionResource, uid types.UID) []*unstructured.Unstructured {
	return v.byIndex(gvr, ownerIndex, string(uid))
}

// ControlPlaneNodes returns the control-plane nodes with a remediation
// resource of any kind watched, whoever owns it, and those that the cache of
// a kind stopped for a lasting error showed when it stopped: quorum does
// not care that a remediator's role was removed.
func (v View) ControlPlaneNodes() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var nodes []string
	for _, r := range v.running {
		nodes = append(nodes, r.informer.GetIndexer().ListIndexFuncValues(controlPlaneIndex)...)
		if !r.informer.HasSynced() {
			nodes = append(nodes, r.remembered.controlPlane...)
		}
	}
	for _, s := range v.stopped {
		nodes = append(nodes, s.shown.controlPlane...)
	}
	return nodes
}

// OtherOwners returns, by node, the NodeHealthChecks but one that own
// remediation resources of any kind watched, or that a kind stopped for a
// lasting error showed when it stopped. It reads only the resources of
// NodeHealthChecks, through their node index.
func (v View) OtherOwners(except types.UID) map[string][]resource.Owner {
	var others map[string][]resource.Owner
	add := func(node string, owner resource.Owner) {
		if owner.UID == except || slices.Contains(others[node], owner) {
			return
		}
		if others == nil {
			others = map[string][]resource.Owner{}
		}
		others[node] = append(others[node], owner)
	}
	v.eachOwner(add)
	return others
}

// OtherOwner returns a NodeHealthCheck but one that owns a remediation
// resource of a node, or "".
func (v View) OtherOwner(node string, except types.UID) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range v.running {
		objs, _ := r.informer.GetIndexer().ByIndex(nodeIndex, node)
		for _, obj := range objs {
			for _, owner := range resource.Owners(obj.(*unstructured.Unstructured)) {
				if owner.UID != except {
					return owner.Name
				}
			}
		}
		if !r.informer.HasSynced() {
			for _, owner := range r.remembered.owners[node] {
				if owner.UID != except {
					return owner.Name
				}
			}
		}
	}
	for _, s := range v.stopped {
		for _, owner := range s.shown.owners[node] {
			if owner.UID != except {
				return owner.Name
			}
		}
	}
	return ""
}

// eachOwner calls add with every node and NodeHealthCheck owning a
// remediation resource of it, as the caches show them and as stopped kinds
// showed them; mu is taken.
func (v View) eachOwner(add func(node string, owner resource.Owner)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range v.running {
		eachOwnerIn(r.informer.GetIndexer(), add)
		if !r.informer.HasSynced() {
			for node, owners := range r.remembered.owners {
				for _, owner := range owners {
					add(node, owner)
				}
			}
		}
	}
	for _, s := range v.stopped {
		for node, owners := range s.shown.owners {
			for _, owner := range owners {
				add(node, owner)
			}
		}
	}
}

func (v View) byIndex(gvr schema.GroupVersionResource, index, key string) []*unstructured.Unstructured {
	r := v.informer(gvr)
	if r == nil {
		return nil
	}
	objs, err := r.informer.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	list := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		list = append(list, obj.(*unstructured.Unstructured))
	}
	return list
}

func indexByOwner(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, uid := range resource.OwnerUIDs(u) {
		keys = append(keys, string(uid))
	}
	return keys, nil
}

func indexByNode(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || len(resource.OwnerUIDs(u)) == 0 {
		return nil, nil
	}
	return []string{resource.TargetNode(u)}, nil
}

func indexByControlPlaneNode(obj any) ([]string, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !resource.ForControlPlaneNode(u) {
		return nil, nil
	}
	return []string{resource.TargetNode(u)}, nil
}
