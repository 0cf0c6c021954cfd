package controller

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	nhclisters "github.com/nodehealthcheck/nhc-controller/pkg/generated/listers/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// templateIndex keys NodeHealthChecks by the templates they reference.
const templateIndex = "template"

func templateKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

func indexByTemplate(obj any) ([]string, error) {
	nhc, ok := obj.(*v1alpha1.NodeHealthCheck)
	if !ok {
		return nil, nil
	}
	var keys []string
	add := func(ref corev1.ObjectReference) {
		keys = append(keys, templateKey(ref.GroupVersionKind().Group, ref.Kind, ref.Namespace, ref.Name))
	}
	if nhc.Spec.RemediationTemplate != nil {
		add(*nhc.Spec.RemediationTemplate)
	}
	for _, e := range nhc.Spec.EscalatingRemediations {
		add(e.RemediationTemplate)
	}
	return keys, nil
}

func (c *Controller) onNHCAdd(obj any) {
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		klog.V(6).InfoS("NodeHealthCheck added", "nodeHealthCheck", klog.KObj(nhc))
		c.enqueue(nhc.Name)
	}
}

// onNHCUpdate enqueues spec changes only: status writes, ours included, do
// not need a sync.
func (c *Controller) onNHCUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*v1alpha1.NodeHealthCheck)
	updated, ok2 := newObj.(*v1alpha1.NodeHealthCheck)
	if ok1 && ok2 && old.Generation != updated.Generation {
		klog.V(6).InfoS("NodeHealthCheck spec changed", "nodeHealthCheck", klog.KObj(updated), "generation", updated.Generation)
		c.enqueue(updated.Name)
	}
}

func (c *Controller) onNHCDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if nhc, ok := obj.(*v1alpha1.NodeHealthCheck); ok {
		klog.V(6).InfoS("NodeHealthCheck deleted", "nodeHealthCheck", klog.KObj(nhc))
		c.enqueue(nhc.Name)
	}
}

func (c *Controller) onNodeAdd(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		c.enqueueSelecting(node.Labels, nil)
	}
}

// onNodeUpdate enqueues the NodeHealthChecks that select the node before or
// after the update, when the update can change a decision: the one a label
// change takes the node from hears of it too.
func (c *Controller) onNodeUpdate(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Node)
	updated, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 || old.ResourceVersion == updated.ResourceVersion {
		return
	}
	if !nodeChanged(old, updated, func() map[string]bool { return c.selectors.get(c.nhcLister).keys }) {
		return
	}
	klog.V(6).InfoS("Node changed", "node", klog.KObj(updated))
	c.enqueueSelecting(old.Labels, updated.Labels)
}

func (c *Controller) onNodeDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		klog.V(6).InfoS("Node deleted", "node", klog.KObj(node))
		c.enqueueSelecting(node.Labels, nil)
	}
}

// enqueueSelecting enqueues the NodeHealthChecks whose selector matches any
// of the label sets.
func (c *Controller) enqueueSelecting(labelSets ...map[string]string) {
	for _, s := range c.selectors.get(c.nhcLister).entries {
		for _, l := range labelSets {
			if l != nil && s.selector.Matches(labels.Set(l)) {
				c.enqueue(s.name)
				break
			}
		}
	}
}

// onRemediationChange hears of every template and remediation resource the
// dynamic informers see: it settles expectations, and enqueues the owners of
// a remediation resource and the NodeHealthChecks that reference a template.
func (c *Controller) onRemediationChange(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, deleted bool) {
	c.expectations.Observe(gvr, obj, deleted)
	for _, owner := range remediation.OwnerNames(obj) {
		klog.V(6).InfoS("Remediation resource changed", "resource", gvr, "object", klog.KObj(obj), "deleted", deleted, "nodeHealthCheck", owner)
		c.enqueue(owner)
	}
	key := templateKey(gvr.Group, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	referencing, _ := c.nhcIndexer.ByIndex(templateIndex, key)
	for _, o := range referencing {
		if nhc, ok := o.(*v1alpha1.NodeHealthCheck); ok {
			klog.V(6).InfoS("Template changed", "resource", gvr, "object", klog.KObj(obj), "nodeHealthCheck", klog.KObj(nhc))
			c.enqueue(nhc.Name)
		}
	}
}

// selectorCache keeps the parsed selectors of all NodeHealthChecks, rebuilt
// when one changes, so that node events do not parse selectors.
type selectorCache struct {
	mu      sync.Mutex
	version map[types.UID]int64
	current selectors
}

type selectors struct {
	entries []selectorEntry
	// keys are the label keys any selector uses.
	keys map[string]bool
}

type selectorEntry struct {
	name     string
	selector labels.Selector
}

func newSelectorCache() *selectorCache {
	return &selectorCache{version: map[types.UID]int64{}}
}

func (s *selectorCache) get(lister nhclisters.NodeHealthCheckLister) selectors {
	nhcs, _ := lister.List(labels.Everything())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unchanged(nhcs) {
		return s.current
	}
	version := make(map[types.UID]int64, len(nhcs))
	current := selectors{keys: map[string]bool{}}
	for _, nhc := range nhcs {
		version[nhc.UID] = nhc.Generation
		selector, err := metav1.LabelSelectorAsSelector(&nhc.Spec.Selector)
		if err != nil {
			continue
		}
		current.entries = append(current.entries, selectorEntry{name: nhc.Name, selector: selector})
		for key := range nhc.Spec.Selector.MatchLabels {
			current.keys[key] = true
		}
		for _, e := range nhc.Spec.Selector.MatchExpressions {
			current.keys[e.Key] = true
		}
	}
	s.version, s.current = version, current
	return current
}

func (s *selectorCache) unchanged(nhcs []*v1alpha1.NodeHealthCheck) bool {
	if len(nhcs) != len(s.version) {
		return false
	}
	for _, nhc := range nhcs {
		if generation, ok := s.version[nhc.UID]; !ok || generation != nhc.Generation {
			return false
		}
	}
	return true
}
