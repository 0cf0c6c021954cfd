package check

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/sim/cluster"
)

// InvTemplateMissing: nothing is created for a NodeHealthCheck while a
// template it references is missing: it is disabled (the spec's
// workflow: "The referenced remediation templates don't exist or are
// malformed" results in a disabled NHC).
const InvTemplateMissing = "no-create-while-template-missing"

// templateLag is how long the controller may use a template that is gone
// when it reads its kind with GET: a template read so is used for 30 s
// (docs/remediation.md, "Template RBAC"), and its picture may be
// pictureLag old. It reads a kind so while it may not watch it, and for
// templateRetry after it was forbidden; else the template's informer shows
// its deletion, within pictureLag.
const templateLag = 30*time.Second + pictureLag

// templateRetry is how long a template kind that could not be watched may
// be read with GET after it can again: its informer is tried again every
// 10 minutes.
const templateRetry = 10 * time.Minute

func isTemplate(gvr schema.GroupVersionResource) bool {
	return slices.ContainsFunc(cluster.Kinds, func(k cluster.Kind) bool { return k.Template() == gvr })
}

func templateKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return gvr.Resource + "/" + namespace + "/" + name
}

// missingTemplate names a template that a NodeHealthCheck referenced, and
// that was missing, all along the lag before t that the controller may
// take to see it gone, its kind served and readable (a kind that goes
// away disables the NodeHealthCheck in its own time); "" if none.
func (c *Checker) missingTemplate(nhc *v1alpha1.NodeHealthCheck, t time.Time) string {
	for _, ref := range nhc.Spec.TemplateRefs() {
		k := cluster.KindOfTemplate(ref.Kind)
		from := t.Add(-pictureLag)
		if !c.readableOver([]cluster.Kind{k}, t.Add(-templateRetry-templateLag), t) {
			from = t.Add(-templateLag)
		}
		key := templateKey(k.Template(), ref.Namespace, ref.Name)
		referenced := c.eachNHCVersion(nhc.Name, from, t, func(_ time.Time, then *v1alpha1.NodeHealthCheck) bool {
			return then != nil && then.UID == nhc.UID && slices.ContainsFunc(then.Spec.TemplateRefs(), func(r corev1.ObjectReference) bool {
				return r.Kind == ref.Kind && r.Namespace == ref.Namespace && r.Name == ref.Name
			})
		})
		if referenced && c.readableOver([]cluster.Kind{k}, from, t) && c.absentOver(c.templates[key], from, t) {
			return ref.Kind + " " + ref.Namespace + "/" + ref.Name
		}
	}
	return ""
}

// absentOver tells whether an object did not exist from one instant to
// another.
func (c *Checker) absentOver(versions []version, from, to time.Time) bool {
	if at(versions, from) != nil {
		return false
	}
	return !slices.ContainsFunc(versions, func(v version) bool { return v.obj != nil && v.at.After(from) && !v.at.After(to) })
}

// templatesReady tells whether every template a NodeHealthCheck references
// exists, its kind served, and its remediation kind not forbidden: else
// it is disabled, and creates nothing.
func (c *Checker) templatesReady(nhc *v1alpha1.NodeHealthCheck) bool {
	for _, ref := range nhc.Spec.TemplateRefs() {
		k := cluster.KindOfTemplate(ref.Kind)
		if _, err := c.store.Get(k.Template(), ref.Namespace, ref.Name); err != nil || !c.store.Served(k.Template()) || c.server.Forbidden(k.Remediation()) {
			return false
		}
	}
	return true
}
