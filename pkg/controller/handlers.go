package controller

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// handlers hear of the informers' changes and enqueue the
// NodeHealthChecks whose decision a change may alter: which change wakes
// which NodeHealthCheck. They do nothing else, but keep the membership
// index current for the node changes they hear of.
type handlers struct {
	queue workqueue.TypedRateLimitingInterface[string]
	// byTemplate finds NodeHealthChecks by the templates they reference.
	byTemplate cache.Indexer
	nodes      nodecache.Lister
	selectors  *selectorCache
	members    *membership
	// newer forgets a deleted node's confirmed copy.
	newer *newerNodes
}

// Register adds the handlers to the informers and to the remediation
// resources' and node leases' changes, and the template index to the
// NodeHealthCheck informer.
func (h *handlers) Register(logger klog.Logger, cfg Config) error {
	if err := cfg.NodeHealthChecks.Informer().AddIndexers(cache.Indexers{templateIndex: indexByTemplate}); err != nil {
		return fmt.Errorf("adding the template index: %w", err)
	}
	if _, err := cfg.NodeHealthChecks.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.addNHC(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { h.updateNHC(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { h.deleteNHC(logger, obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return err
	}
	if _, err := cfg.Nodes.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, isInInitialList bool) { h.addNode(obj, isInInitialList) },
		UpdateFunc: func(oldObj, newObj any) { h.updateNode(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { h.deleteNode(logger, obj) },
	}, cache.HandlerOptions{Logger: &logger}); err != nil {
		return err
	}
	// A control-plane create that gave the slot up may have held back any
	// NodeHealthCheck's control-plane node.
	cfg.Changes.AddSlotFreedHandler(func() { h.enqueueOthers("") })
	cfg.Changes.AddChangeHandler(func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string) {
		h.remediationChanged(logger, gvr, obj, deleted, confirmed)
	})
	cfg.Changes.AddKindChangeHandler(func(gvr schema.GroupVersionResource, users []string) { h.kindChanged(logger, gvr, users) })
	if cfg.LeaseChanges != nil {
		if err := cfg.LeaseChanges.AddChangeHandler(func(node string, own bool, holders ...string) { h.leaseChanged(logger, node, own, holders) }); err != nil {
			return fmt.Errorf("adding the node lease handler: %w", err)
		}
	}
	return nil
}

// templateIndex keys NodeHealthChecks by the templates they reference.
const templateIndex = "template"

func templateIndexKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// indexByTemplate keys a NodeHealthCheck by each template it references,
// also without the reference's namespace: a cluster-scoped template, whose
// reference carries a namespace all the same, comes without one.
func indexByTemplate(obj any) ([]string, error) {
	nhc, ok := obj.(*v1alpha1.NodeHealthCheck)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, ref := range nhc.Spec.TemplateRefs() {
		group := ref.GroupVersionKind().Group
		for _, namespace := range []string{ref.Namespace, ""} {
			if key := templateIndexKey(group, ref.Kind, namespace, ref.Name); !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	return keys, nil
}

// addNHC enqueues every NodeHealthCheck: the new one may share nodes with
// any of them.
func (h *handlers) addNHC(logger klog.Logger, obj any) {
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		logger.V(6).Info("NodeHealthCheck added", "nodeHealthCheck", klog.KObj(nhc))
		h.queue.Add(nhc.Name)
		h.enqueueOthers(nhc.Name)
	}
}

// updateNHC enqueues spec changes only, and a NodeHealthCheck created
// again under its name: status writes, ours included, do not need a sync. A new selector may share nodes with any other
// NodeHealthCheck, or no longer: they are enqueued too. One that can no
// longer act, or can again (disabled or enabled by a status write, paused,
// resumed, being deleted), may hand shared nodes over or take them back: it
// and those that may share its nodes are enqueued; so are they when a
// status write lets go of a node it held on its record.
func (h *handlers) updateNHC(logger klog.Logger, oldObj, newObj any) {
	old, ok1 := oldObj.(*v1alpha1.NodeHealthCheck)
	updated, ok2 := newObj.(*v1alpha1.NodeHealthCheck)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != updated.UID {
		// Deleted and created again while the watch missed both: a new
		// object, whatever its generation says.
		h.addNHC(logger, updated)
		return
	}
	if old.Generation != updated.Generation {
		logger.V(6).Info("NodeHealthCheck spec changed", "nodeHealthCheck", klog.KObj(updated), "generation", updated.Generation)
		h.queue.Add(updated.Name)
		if !apiequality.Semantic.DeepEqual(old.Spec.Selector, updated.Spec.Selector) {
			h.enqueueOthers(updated.Name)
			return
		}
	}
	if health.CannotAct(old) != health.CannotAct(updated) {
		logger.V(6).Info("NodeHealthCheck can act or no longer", "nodeHealthCheck", klog.KObj(updated), "cannotAct", health.CannotAct(updated))
		h.queue.Add(updated.Name)
		h.enqueueSharing(updated)
	}
	if released := releasedOnRecord(old, updated); len(released) > 0 {
		logger.V(6).Info("NodeHealthCheck no longer holds nodes on its record", "nodeHealthCheck", klog.KObj(updated), "nodes", released)
		if h.anyMayBeControlPlane(released) {
			// It held back every control-plane node.
			h.enqueueOthers(updated.Name)
			return
		}
		h.enqueueSelectingNodes([]string{updated.Name}, released...)
	}
}

// anyMayBeControlPlane tells whether any of the nodes is a control-plane
// node in the node cache, or is gone and may have been one.
func (h *handlers) anyMayBeControlPlane(nodes []string) bool {
	for _, name := range nodes {
		n, err := h.nodes.Get(name)
		if err != nil || v1alpha1.IsControlPlane(n.Labels) {
			return true
		}
	}
	return false
}

// releasedOnRecord returns the nodes a status write let go of: held on
// the record (health.HoldsOnRecord), or recorded with a remediation
// resource, which keeps the node busy for others while its kind cannot be
// read. Another NodeHealthCheck that selects such a node may take it over,
// or one control-plane node may start now, and must not wait for its next
// requeue, up to a minute, to see it. It may select the node while this one
// no longer does (relabelled), so the nodes' labels, not this one's
// selector, say whom to wake.
func releasedOnRecord(old, updated *v1alpha1.NodeHealthCheck) []string {
	released := dropped(health.NodesHeldOnRecord(old), health.NodesHeldOnRecord(updated))
	released = append(released, dropped(health.NodesRecordingRemediations(old), health.NodesRecordingRemediations(updated))...)
	slices.Sort(released)
	return slices.Compact(released)
}

// dropped returns the nodes of before that are not in after.
func dropped(before, after []string) []string {
	if len(before) == 0 {
		return nil
	}
	kept := make(map[string]bool, len(after))
	for _, node := range after {
		kept[node] = true
	}
	return slices.DeleteFunc(before, func(node string) bool { return kept[node] })
}

func (h *handlers) deleteNHC(logger klog.Logger, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		logger.V(6).Info("NodeHealthCheck deleted", "nodeHealthCheck", klog.KObj(nhc))
		h.queue.Add(nhc.Name)
		h.enqueueOthers(nhc.Name)
	}
}

// enqueueSharing enqueues the NodeHealthChecks that may share nodes with
// one: who remediates a shared node may have changed.
func (h *handlers) enqueueSharing(nhc *v1alpha1.NodeHealthCheck) {
	for _, peer := range h.selectors.get().peersOf(nhc) {
		h.queue.Add(peer.Name)
	}
}

// enqueueOthers enqueues every NodeHealthCheck but one, whose selector
// appeared, changed or went: the overlaps of any of them may have changed.
// Such changes are rare; a node event wakes only the selecting ones.
func (h *handlers) enqueueOthers(name string) {
	for _, s := range h.selectors.get().entries {
		if s.name != name {
			h.queue.Add(s.name)
		}
	}
}

// addNode places a node in the membership, and enqueues the
// NodeHealthChecks that select a node added after the start. The nodes of
// the initial list wake nobody: every NodeHealthCheck's first sync, after
// the node cache has synced, sees them all, and thousands of them would
// each sync their NodeHealthCheck again.
func (h *handlers) addNode(obj any, isInInitialList bool) {
	if node, ok := obj.(*nodeview.Node); ok {
		h.members.Update(node.Name)
		if !isInInitialList {
			h.enqueueSelecting(node.Labels)
		}
	}
}

// updateNode enqueues the NodeHealthChecks that select the node before or
// after the update, when the update can change a decision: the one a label
// change takes the node from hears of it too.
func (h *handlers) updateNode(logger klog.Logger, oldObj, newObj any) {
	old, ok1 := oldObj.(*nodeview.Node)
	updated, ok2 := newObj.(*nodeview.Node)
	if !ok1 || !ok2 || old.ResourceVersion == updated.ResourceVersion {
		return
	}
	// Every change the cache keeps, so that the membership holds the
	// cache's node and no older copy beside it.
	h.members.Update(updated.Name)
	if !nodeview.Matters(old, updated, func() map[string]bool { return h.selectors.get().keys }) {
		return
	}
	logger.V(6).Info("Node changed", "node", klog.KObj(updated))
	h.enqueueSelecting(old.Labels, updated.Labels)
}

func (h *handlers) deleteNode(logger klog.Logger, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if node, ok := obj.(*nodeview.Node); ok {
		logger.V(6).Info("Node deleted", "node", klog.KObj(node))
		h.members.Update(node.Name)
		h.newer.Forget(node.Name)
		h.enqueueSelecting(node.Labels)
	}
}

// enqueueSelecting enqueues the NodeHealthChecks whose selector matches any
// of the label sets.
func (h *handlers) enqueueSelecting(labelSets ...nodeview.Labels) {
	h.enqueueSelectingBut(nil, labelSets...)
}

// enqueueSelectingNodes enqueues the NodeHealthChecks but those named that
// select any of the nodes, by their labels in the node cache.
func (h *handlers) enqueueSelectingNodes(but []string, nodes ...string) {
	var labelSets []nodeview.Labels
	for _, name := range nodes {
		if n, err := h.nodes.Get(name); err == nil {
			labelSets = append(labelSets, n.Labels)
		}
	}
	if len(labelSets) > 0 {
		h.enqueueSelectingBut(but, labelSets...)
	}
}

// enqueueSelectingBut enqueues the NodeHealthChecks but those named whose
// selector matches any of the label sets.
func (h *handlers) enqueueSelectingBut(but []string, labelSets ...nodeview.Labels) {
	for _, s := range h.selectors.get().entries {
		if slices.Contains(but, s.name) {
			continue
		}
		for _, l := range labelSets {
			if s.selector.Matches(l) {
				h.queue.Add(s.name)
				break
			}
		}
	}
}

// remediationChanged hears of every template and remediation resource the
// dynamic informers see. It enqueues the owners of a remediation resource,
// the NodeHealthChecks that select its node (another owner's resource may
// have held the node back), every NodeHealthCheck for a control-plane
// remediation (it held back every control-plane node), and the
// NodeHealthChecks that reference a template. A NodeHealthCheck whose own
// create the change confirms is not woken: the sync that sent it recorded
// it, and requeues itself for anything left.
func (h *handlers) remediationChanged(logger klog.Logger, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string) {
	for _, owner := range resource.OwnerNames(obj) {
		if slices.Contains(confirmed, owner) {
			continue
		}
		logger.V(6).Info("Remediation resource changed", "resource", gvr, "object", klog.KObj(obj), "deleted", deleted, "nodeHealthCheck", klog.KRef("", owner))
		h.queue.Add(owner)
	}
	if resource.ForControlPlaneNode(obj) {
		for _, s := range h.selectors.get().entries {
			if !slices.Contains(confirmed, s.name) {
				h.queue.Add(s.name)
			}
		}
	} else {
		h.enqueueSelectingNodes(confirmed, resource.TargetNode(obj))
	}
	key := templateIndexKey(gvr.Group, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	referencing, _ := h.byTemplate.ByIndex(templateIndex, key)
	for _, o := range referencing {
		if nhc, ok := o.(*v1alpha1.NodeHealthCheck); ok {
			logger.V(6).Info("Template changed", "resource", gvr, "object", klog.KObj(obj), "nodeHealthCheck", klog.KObj(nhc))
			h.queue.Add(nhc.Name)
		}
	}
}

// kindChanged hears of a kind whose informer synced or failed: what the
// NodeHealthChecks that use it read changed, and a control-plane
// remediation of it may hold back the control-plane nodes of any. A retry
// that failed as before concerns its users alone (users not nil).
func (h *handlers) kindChanged(logger klog.Logger, gvr schema.GroupVersionResource, users []string) {
	if users != nil {
		logger.V(4).Info("Remediation kind failed again", "resource", gvr, "nodeHealthChecks", users)
		for _, nhc := range users {
			h.queue.Add(nhc)
		}
		return
	}
	logger.V(4).Info("Remediation kind synced or failed", "resource", gvr)
	h.enqueueOthers("")
}

// leaseChanged hears of a node lease that was taken, released or changed
// hands: the NodeHealthChecks that select the node may remediate it now, and
// a NodeHealthCheck that held it may have to release it. A lease this
// process took wakes not the NodeHealthCheck it took it for: that sync
// records the outcome, and requeues itself for anything left.
func (h *handlers) leaseChanged(logger klog.Logger, node string, own bool, holders []string) {
	logger.V(6).Info("Node lease changed", "node", klog.KRef("", node), "own", own, "holders", holders)
	var taker []string
	if own && len(holders) > 0 {
		if nhc, ok := health.LeaseHolderNHC(holders[len(holders)-1]); ok {
			taker = []string{nhc}
		}
	}
	for _, holder := range holders {
		if nhc, ok := health.LeaseHolderNHC(holder); ok && !slices.Contains(taker, nhc) {
			h.queue.Add(nhc)
		}
	}
	h.enqueueSelectingNodes(taker, node)
}
