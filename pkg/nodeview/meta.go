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

func (m *Meta) GetName() string                     { return m.Name }
func (m *Meta) SetName(name string)                 { m.Name = name }
func (m *Meta) GetUID() types.UID                   { return m.UID }
func (m *Meta) SetUID(uid types.UID)                { m.UID = uid }
func (m *Meta) GetResourceVersion() string          { return m.ResourceVersion }
func (m *Meta) SetResourceVersion(version string)   { m.ResourceVersion = version }
func (m *Meta) GetAnnotations() map[string]string   { return m.Annotations }
func (m *Meta) SetAnnotations(a map[string]string)  { m.Annotations = a }
func (m *Meta) GetCreationTimestamp() metav1.Time   { return m.CreationTimestamp }
func (m *Meta) SetCreationTimestamp(t metav1.Time)  { m.CreationTimestamp = t }
func (m *Meta) GetDeletionTimestamp() *metav1.Time  { return m.DeletionTimestamp }
func (m *Meta) SetDeletionTimestamp(t *metav1.Time) { m.DeletionTimestamp = t }

// Nodes have no namespace. The fields below are not kept.

func (*Meta) GetNamespace() string                          { return "" }
func (*Meta) SetNamespace(string)                           {}
func (*Meta) GetGenerateName() string                       { return "" }
func (*Meta) SetGenerateName(string)                        {}
func (*Meta) GetGeneration() int64                          { return 0 }
func (*Meta) SetGeneration(int64)                           {}
func (*Meta) GetSelfLink() string                           { return "" }
func (*Meta) SetSelfLink(string)                            {}
func (*Meta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (*Meta) SetDeletionGracePeriodSeconds(*int64)          {}
func (*Meta) GetFinalizers() []string                       { return nil }
func (*Meta) SetFinalizers([]string)                        {}
func (*Meta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (*Meta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (*Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (*Meta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetLabels is nil: a Node's labels are its Labels, which selectors read
// without a map.
func (*Meta) GetLabels() map[string]string { return nil }
func (*Meta) SetLabels(map[string]string)  {}
