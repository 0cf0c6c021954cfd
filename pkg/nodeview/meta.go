package nodeview

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is what a Node keeps of a node's metadata. A metav1.ObjectMeta
// takes 232 bytes, most of them fields a node cache never fills; this
// takes 88, and the node cache holds tens of thousands, each scanned by
// every garbage collection. It is a metav1.Object, as client-go's store
// and reflector read it: a field it does not keep reads as empty, and
// setting it does nothing.
//
// +k8s:deepcopy-gen=true
type Meta struct {
	Name            string
	UID             types.UID
	ResourceVersion string
	// Annotations are the kept ones (IsKeptAnnotation); nil without any.
	Annotations       map[string]string
	CreationTimestamp metav1.Time
	DeletionTimestamp *metav1.Time
}

var _ metav1.Object = &Meta{}

// GetName returns the node's name.
func (m *Meta) GetName() string { return m.Name }

// SetName sets the node's name.
func (m *Meta) SetName(name string) { m.Name = name }

// GetUID returns the node's UID.
func (m *Meta) GetUID() types.UID { return m.UID }

// SetUID sets the node's UID.
func (m *Meta) SetUID(uid types.UID) { m.UID = uid }

// GetResourceVersion returns the node's resourceVersion.
func (m *Meta) GetResourceVersion() string { return m.ResourceVersion }

// SetResourceVersion sets the node's resourceVersion.
func (m *Meta) SetResourceVersion(version string) { m.ResourceVersion = version }

// GetAnnotations returns the kept annotations.
func (m *Meta) GetAnnotations() map[string]string { return m.Annotations }

// SetAnnotations sets the kept annotations.
func (m *Meta) SetAnnotations(annotations map[string]string) { m.Annotations = annotations }

// GetCreationTimestamp returns when the node was created.
func (m *Meta) GetCreationTimestamp() metav1.Time { return m.CreationTimestamp }

// SetCreationTimestamp sets when the node was created.
func (m *Meta) SetCreationTimestamp(t metav1.Time) { m.CreationTimestamp = t }

// GetDeletionTimestamp returns when the node's deletion was asked for, or
// nil.
func (m *Meta) GetDeletionTimestamp() *metav1.Time { return m.DeletionTimestamp }

// SetDeletionTimestamp sets when the node's deletion was asked for.
func (m *Meta) SetDeletionTimestamp(t *metav1.Time) { m.DeletionTimestamp = t }

// GetNamespace is empty: nodes have no namespace.
func (*Meta) GetNamespace() string { return "" }

// SetNamespace does nothing: nodes have no namespace.
func (*Meta) SetNamespace(string) {}

// GetLabels is nil: a Node's labels are its Labels, which selectors read
// without a map.
func (*Meta) GetLabels() map[string]string { return nil }

// SetLabels does nothing: a Node's labels are its Labels.
func (*Meta) SetLabels(map[string]string) {}

// GetGenerateName is empty: not kept.
func (*Meta) GetGenerateName() string { return "" }

// SetGenerateName does nothing: not kept.
func (*Meta) SetGenerateName(string) {}

// GetGeneration is 0: not kept.
func (*Meta) GetGeneration() int64 { return 0 }

// SetGeneration does nothing: not kept.
func (*Meta) SetGeneration(int64) {}

// GetSelfLink is empty: not kept.
func (*Meta) GetSelfLink() string { return "" }

// SetSelfLink does nothing: not kept.
func (*Meta) SetSelfLink(string) {}

// GetDeletionGracePeriodSeconds is nil: not kept.
func (*Meta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds does nothing: not kept.
func (*Meta) SetDeletionGracePeriodSeconds(*int64) {}

// GetFinalizers is nil: not kept.
func (*Meta) GetFinalizers() []string { return nil }

// SetFinalizers does nothing: not kept.
func (*Meta) SetFinalizers([]string) {}

// GetOwnerReferences is nil: not kept.
func (*Meta) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences does nothing: not kept.
func (*Meta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields is nil: not kept.
func (*Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields does nothing: not kept.
func (*Meta) SetManagedFields([]metav1.ManagedFieldsEntry) {}
