package kinds

import (
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Keep is what a cache keeps of an object: what the controller reads of
// it (resource.Keep), or, for an object that no NodeHealthCheck owns, that
// remediates no control-plane node and is no named template, a metadata
// shell: its name, for the cache's key, and its UID.
func Keep(u *unstructured.Unstructured, named bool) any {
	if !named && !resource.Ours(u) {
		return shellOf(u)
	}
	return resource.Keep(u, named)
}

// shell is what identifies an object and its version: the cache's key, and
// what a template named later is read again by. It is all an object none of
// ours costs, so it holds four strings and nothing else: a
// PartialObjectMetadata costs several times as much in the cache.
type shell struct {
	namespace, name, uid, resourceVersion string
}

// shellOf is an object's shell; the shells of a namespace share its name.
func shellOf(u *unstructured.Unstructured) *shell {
	return &shell{namespace: unique.Make(u.GetNamespace()).Value(), name: u.GetName(), uid: string(u.GetUID()), resourceVersion: u.GetResourceVersion()}
}

// GetObjectMeta gives the cache its key.
func (s *shell) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, UID: types.UID(s.uid), ResourceVersion: s.resourceVersion}
}

// unstructured is a shell as the Unstructured that Get returns: its
// template, if it is one, was not kept.
func (s *shell) unstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(s.namespace)
	u.SetName(s.name)
	u.SetUID(types.UID(s.uid))
	u.SetResourceVersion(s.resourceVersion)
	resource.MarkTemplateNotKept(u)
	return u
}
