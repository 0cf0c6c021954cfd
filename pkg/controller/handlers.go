package controller

import (
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

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
func (c *Controller) addNHC(logger klog.Logger, obj any) {
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		logger.V(6).Info("NodeHealthCheck added", "nodeHealthCheck", klog.KObj(nhc))
		c.queue.Add(nhc.Name)
		c.enqueueOthers(nhc.Name)
	}
}

// updateNHC enqueues spec changes only, and a NodeHealthCheck created
// again under its name: status writes, ours included, do not need a sync. A new selector may share nodes with any other
// NodeHealthCheck, or no longer: they are enqueued too. One that can no
// longer act, or can again (disabled or enabled by a status write, paused,
// resumed, being deleted), may hand shared nodes over or take them back: it
// and those that may share its nodes are enqueued; so are they when a
// status write lets go of a node it held on its record.
func (c *Controller) updateNHC(logger klog.Logger, oldObj, newObj any) {
	old, ok1 := oldObj.(*v1alpha1.NodeHealthCheck)
	updated, ok2 := newObj.(*v1alpha1.NodeHealthCheck)
	if !ok1 || !ok2 {
		return
	}
	if old.UID != updated.UID {
		// Deleted and created again while the watch missed both: a new
		// object, whatever its generation says.
		c.addNHC(logger, updated)
		return
	}
	if old.Generation != updated.Generation {
		logger.V(6).Info("NodeHealthCheck spec changed", "nodeHealthCheck", klog.KObj(updated), "generation", updated.Generation)
		c.queue.Add(updated.Name)
		if !apiequality.Semantic.DeepEqual(old.Spec.Selector, updated.Spec.Selector) {
			c.enqueueOthers(updated.Name)
			return
		}
	}
	if health.CannotAct(old) != health.CannotAct(updated) {
		logger.V(6).Info("NodeHealthCheck can act or no longer", "nodeHealthCheck", klog.KObj(updated), "cannotAct", health.CannotAct(updated))
		c.queue.Add(updated.Name)
		c.enqueueSharing(updated)
	}
	if released := releasedOnRecord(old, updated); len(released) > 0 {
		logger.V(6).Info("NodeHealthCheck no longer holds nodes on its record", "nodeHealthCheck", klog.KObj(updated), "nodes", released)
		if c.anyMayBeControlPlane(released) {
			// It held back every control-plane node.
			c.enqueueOthers(updated.Name)
			return
		}
		c.enqueueSelectingNodes([]string{updated.Name}, released...)
	}
}

// anyMayBeControlPlane tells whether any of the nodes is a control-plane
// node in the node cache, or is gone and may have been one.
func (c *Controller) anyMayBeControlPlane(nodes []string) bool {
	for _, name := range nodes {
		n, err := c.nodeLister.Get(name)
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

func (c *Controller) deleteNHC(logger klog.Logger, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		logger.V(6).Info("NodeHealthCheck deleted", "nodeHealthCheck", klog.KObj(nhc))
		c.queue.Add(nhc.Name)
		c.enqueueOthers(nhc.Name)
	}
}

// enqueueOthers enqueues every NodeHealthCheck but one, whose selector
// appeared, changed or went: the overlaps of any of them may have changed.
// Such changes are rare; a node event wakes only the selecting ones.
func (c *Controller) enqueueOthers(name string) {
	for _, s := range c.selectors.get(c.nhcLister).entries {
		if s.name != name {
			c.queue.Add(s.name)
		}
	}
}

// addNode places a node in the membership, and enqueues the
// NodeHealthChecks that select a node added after the start. The nodes of
// the initial list wake nobody: every NodeHealthCheck's first sync, after
// the node cache has synced, sees them all, and thousands of them would
// each sync their NodeHealthCheck again.
func (c *Controller) addNode(obj any, isInInitialList bool) {
	if node, ok := obj.(*nodeview.Node); ok {
		c.members.update(node.Name, node)
		if !isInInitialList {
			c.enqueueSelecting(node.Labels)
		}
	}
}

// updateNode enqueues the NodeHealthChecks that select the node before or
// after the update, when the update can change a decision: the one a label
// change takes the node from hears of it too.
func (c *Controller) updateNode(logger klog.Logger, oldObj, newObj any) {
	old, ok1 := oldObj.(*nodeview.Node)
	updated, ok2 := newObj.(*nodeview.Node)
	if !ok1 || !ok2 || old.ResourceVersion == updated.ResourceVersion {
		return
	}
	if !nodeview.Matters(old, updated, func() map[string]bool { return c.selectors.get(c.nhcLister).keys }) {
		return
	}
	// Membership follows the labels selectors use, which nodeview.Matters
	// looks at: a heartbeat compares no labels twice.
	if !old.Labels.Equal(updated.Labels) {
		c.members.update(updated.Name, updated)
	}
	logger.V(6).Info("Node changed", "node", klog.KObj(updated))
	c.enqueueSelecting(old.Labels, updated.Labels)
}

func (c *Controller) deleteNode(logger klog.Logger, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if node, ok := obj.(*nodeview.Node); ok {
		logger.V(6).Info("Node deleted", "node", klog.KObj(node))
		c.members.update(node.Name, nil)
		c.enqueueSelecting(node.Labels)
	}
}

// enqueueSelecting enqueues the NodeHealthChecks whose selector matches any
// of the label sets.
func (c *Controller) enqueueSelecting(labelSets ...nodeview.Labels) {
	c.enqueueSelectingBut(nil, labelSets...)
}

// enqueueSelectingNodes enqueues the NodeHealthChecks but those named that
// select any of the nodes, by their labels in the node cache.
func (c *Controller) enqueueSelectingNodes(but []string, nodes ...string) {
	var labelSets []nodeview.Labels
	for _, name := range nodes {
		if n, err := c.nodeLister.Get(name); err == nil {
			labelSets = append(labelSets, n.Labels)
		}
	}
	if len(labelSets) > 0 {
		c.enqueueSelectingBut(but, labelSets...)
	}
}

// enqueueSelectingBut enqueues the NodeHealthChecks but those named whose
// selector matches any of the label sets.
func (c *Controller) enqueueSelectingBut(but []string, labelSets ...nodeview.Labels) {
	for _, s := range c.selectors.get(c.nhcLister).entries {
		if slices.Contains(but, s.name) {
			continue
		}
		for _, l := range labelSets {
			if s.selector.Matches(l) {
				c.queue.Add(s.name)
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
func (c *Controller) remediationChanged(logger klog.Logger, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool, confirmed []string) {
	for _, owner := range resource.OwnerNames(obj) {
		if slices.Contains(confirmed, owner) {
			continue
		}
		logger.V(6).Info("Remediation resource changed", "resource", gvr, "object", klog.KObj(obj), "deleted", deleted, "nodeHealthCheck", klog.KRef("", owner))
		c.queue.Add(owner)
	}
	if resource.ForControlPlaneNode(obj) {
		for _, s := range c.selectors.get(c.nhcLister).entries {
			if !slices.Contains(confirmed, s.name) {
				c.queue.Add(s.name)
			}
		}
	} else {
		c.enqueueSelectingNodes(confirmed, resource.TargetNode(obj))
	}
	key := templateIndexKey(gvr.Group, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	referencing, _ := c.nhcIndexer.ByIndex(templateIndex, key)
	for _, o := range referencing {
		if nhc, ok := o.(*v1alpha1.NodeHealthCheck); ok {
			logger.V(6).Info("Template changed", "resource", gvr, "object", klog.KObj(obj), "nodeHealthCheck", klog.KObj(nhc))
			c.queue.Add(nhc.Name)
		}
	}
}

// kindChanged hears of a kind whose informer synced or failed: what the
// NodeHealthChecks that use it read changed, and a control-plane
// remediation of it may hold back the control-plane nodes of any. A retry
// that failed as before concerns its users alone (users not nil).
func (c *Controller) kindChanged(logger klog.Logger, gvr schema.GroupVersionResource, users []string) {
	if users != nil {
		logger.V(4).Info("Remediation kind failed again", "resource", gvr, "nodeHealthChecks", users)
		for _, nhc := range users {
			c.queue.Add(nhc)
		}
		return
	}
	logger.V(4).Info("Remediation kind synced or failed", "resource", gvr)
	c.enqueueOthers("")
}

// leaseChanged hears of a node lease that was taken, released or changed
// hands: the NodeHealthChecks that select the node may remediate it now, and
// a NodeHealthCheck that held it may have to release it. A lease this
// process took wakes not the NodeHealthCheck it took it for: that sync
// records the outcome, and requeues itself for anything left.
func (c *Controller) leaseChanged(logger klog.Logger, node string, own bool, holders []string) {
	logger.V(6).Info("Node lease changed", "node", klog.KRef("", node), "own", own, "holders", holders)
	var taker []string
	if own && len(holders) > 0 {
		if nhc, ok := health.LeaseHolderNHC(holders[len(holders)-1]); ok {
			taker = []string{nhc}
		}
	}
	for _, holder := range holders {
		if nhc, ok := health.LeaseHolderNHC(holder); ok && !slices.Contains(taker, nhc) {
			c.queue.Add(nhc)
		}
	}
	c.enqueueSelectingNodes(taker, node)
}
