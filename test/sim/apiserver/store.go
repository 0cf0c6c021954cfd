package apiserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Resource is a kind the simulated API server knows, served or not: the
// world defines each before a history starts.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Status is true when the kind has a status subresource: writes of the
	// object keep the status, writes of the subresource keep the rest.
	Status bool
	// Served is false while its CRD is not installed.
	Served bool
}

// event is a change of one object, at the resourceVersion it got.
type event struct {
	typ watch.EventType
	obj *unstructured.Unstructured
	rv  int64
}

// Store holds the objects of the simulated API server, with etcd's
// semantics that controllers rely on: one resourceVersion counter for all
// writes, optimistic concurrency, UID preconditions, finalizers that turn a
// delete into a deletionTimestamp, and a history of changes from which
// watches resume, until it is compacted (then a watch from before is 410
// Gone and the reflector lists again).
type Store struct {
	now       func() time.Time
	rv        int64
	uids      int
	resources map[schema.GroupVersionResource]*Resource
	objects   map[schema.GroupVersionResource]map[string]*unstructured.Unstructured
	history   map[schema.GroupVersionResource][]event
	// compacted is the resourceVersion before which history is gone.
	compacted int64
	// changed hears of every change, for the watches and the invariants.
	changed func(gvr schema.GroupVersionResource, e event, old *unstructured.Unstructured)
}

func newStore(now func() time.Time) *Store {
	return &Store{
		now: now, resources: map[schema.GroupVersionResource]*Resource{},
		objects: map[schema.GroupVersionResource]map[string]*unstructured.Unstructured{},
		history: map[schema.GroupVersionResource][]event{},
	}
}

// Define makes a kind known to the server, served or not.
func (s *Store) Define(r Resource) {
	rc := r
	s.resources[r.GVR] = &rc
	if s.objects[r.GVR] == nil {
		s.objects[r.GVR] = map[string]*unstructured.Unstructured{}
	}
}

// Served tells whether a kind is served: defined, and its CRD installed.
func (s *Store) Served(gvr schema.GroupVersionResource) bool {
	r, ok := s.resources[gvr]
	return ok && r.Served
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// resourceVersion of an object as a number.
func resourceVersion(obj *unstructured.Unstructured) int64 {
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return rv
}

// Get returns a copy of an object, or a NotFound error.
func (s *Store) Get(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, ok := s.objects[gvr][key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return obj.DeepCopy(), nil
}

// list returns the objects that match, sorted by key, and the current
// resourceVersion.
func (s *Store) list(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, int64) {
	var keys []string
	for k, obj := range s.objects[gvr] {
		if (namespace == "" || obj.GetNamespace() == namespace) && selector.Matches(labels.Set(obj.GetLabels())) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	items := make([]*unstructured.Unstructured, len(keys))
	for i, k := range keys {
		items[i] = s.objects[gvr][k].DeepCopy()
	}
	return items, s.rv
}

func (s *Store) record(gvr schema.GroupVersionResource, typ watch.EventType, obj, old *unstructured.Unstructured) {
	e := event{typ: typ, obj: obj.DeepCopy(), rv: resourceVersion(obj)}
	s.history[gvr] = append(s.history[gvr], e)
	if s.changed != nil {
		s.changed(gvr, e, old)
	}
}

func (s *Store) nextRV() string {
	s.rv++
	return strconv.FormatInt(s.rv, 10)
}

// namespaces is the resource of namespaces: a namespaced object is created
// only in a namespace that exists, as the API server admits it.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Create stores a new object as the API server creates one: a name from
// generateName, a UID, a creation timestamp, generation 1, and no status
// where the kind has a status subresource.
func (s *Store) Create(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r := s.resources[gvr]
	if r.Namespaced {
		if _, err := s.Get(namespaces, "", obj.GetNamespace()); err != nil {
			return nil, err
		}
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		s.uids++
		obj.SetName(fmt.Sprintf("%s%05d", obj.GetGenerateName(), s.uids))
	}
	if obj.GetName() == "" {
		return nil, apierrors.NewBadRequest("name or generateName is required")
	}
	k := key(obj.GetNamespace(), obj.GetName())
	if _, exists := s.objects[gvr][k]; exists {
		return nil, apierrors.NewAlreadyExists(gvr.GroupResource(), obj.GetName())
	}
	s.uids++
	obj.SetUID(types.UID(fmt.Sprintf("uid-%d", s.uids)))
	obj.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(time.Second)))
	obj.SetDeletionTimestamp(nil)
	obj.SetGeneration(1)
	obj.SetResourceVersion(s.nextRV())
	if r.Status {
		unstructured.RemoveNestedField(obj.Object, "status")
	}
	s.objects[gvr][k] = obj.DeepCopy()
	s.record(gvr, watch.Added, obj, nil)
	return obj, nil
}

// preconditions checks a write's expected UID and resourceVersion.
func preconditions(gvr schema.GroupVersionResource, current *unstructured.Unstructured, uid types.UID, rv string) error {
	if uid != "" && uid != current.GetUID() {
		return apierrors.NewConflict(gvr.GroupResource(), current.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, current.GetUID())) //nolint:staticcheck // kube-apiserver's own words
	}
	if rv != "" && rv != current.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), current.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nil
}

// Update replaces an object, or its status when status is true, with the
// UID and resourceVersion it carries as preconditions.
func (s *Store) Update(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, status bool) (*unstructured.Unstructured, error) {
	current, err := s.Get(gvr, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil, err
	}
	if err := preconditions(gvr, current, obj.GetUID(), obj.GetResourceVersion()); err != nil {
		return nil, err
	}
	return s.replace(gvr, current, obj, status)
}

// replace writes updated over current, keeping what a write may not change.
func (s *Store) replace(gvr schema.GroupVersionResource, current, updated *unstructured.Unstructured, status bool) (*unstructured.Unstructured, error) {
	r := s.resources[gvr]
	next := updated.DeepCopy()
	if r.Status {
		if status {
			next = current.DeepCopy()
			if st, ok := updated.Object["status"]; ok {
				next.Object["status"] = st
			} else {
				delete(next.Object, "status")
			}
		} else if st, ok := current.Object["status"]; ok {
			next.Object["status"] = st
		} else {
			delete(next.Object, "status")
		}
	}
	next.SetUID(current.GetUID())
	next.SetCreationTimestamp(current.GetCreationTimestamp())
	next.SetDeletionTimestamp(current.GetDeletionTimestamp())
	next.SetGeneration(current.GetGeneration())
	if !status && specChanged(current, next) {
		next.SetGeneration(current.GetGeneration() + 1)
	}
	if equalContent(current, next) {
		return current, nil
	}
	next.SetResourceVersion(s.nextRV())
	k := key(next.GetNamespace(), next.GetName())
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 {
		delete(s.objects[gvr], k)
		s.record(gvr, watch.Deleted, next, current)
		return next, nil
	}
	s.objects[gvr][k] = next.DeepCopy()
	s.record(gvr, watch.Modified, next, current)
	return next, nil
}

// specChanged tells whether anything but metadata and status changed.
func specChanged(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := map[string]any{}
		for k, v := range u.Object {
			if k != "metadata" && k != "status" {
				m[k] = v
			}
		}
		return m
	}
	x, _ := json.Marshal(strip(a))
	y, _ := json.Marshal(strip(b))
	return string(x) != string(y)
}

func equalContent(a, b *unstructured.Unstructured) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	x.SetResourceVersion("")
	y.SetResourceVersion("")
	xj, _ := json.Marshal(x.Object)
	yj, _ := json.Marshal(y.Object)
	return string(xj) == string(yj)
}

// patch applies a JSON merge patch. A uid or resourceVersion in the patch is
// a precondition, as the API server makes it one.
func (s *Store) patch(gvr schema.GroupVersionResource, namespace, name string, patch []byte, status bool) (*unstructured.Unstructured, error) {
	current, err := s.Get(gvr, namespace, name)
	if err != nil {
		return nil, err
	}
	original, err := json.Marshal(current.Object)
	if err != nil {
		return nil, err
	}
	patched, err := jsonpatch.MergePatch(original, patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(patched); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if next.GetUID() != current.GetUID() {
		return nil, preconditions(gvr, current, next.GetUID(), "")
	}
	if next.GetResourceVersion() != current.GetResourceVersion() {
		return nil, preconditions(gvr, current, "", next.GetResourceVersion())
	}
	return s.replace(gvr, current, next, status)
}

// Remove deletes an object, or marks it deleting while it has finalizers.
func (s *Store) Remove(gvr schema.GroupVersionResource, namespace, name string, opts *metav1.DeleteOptions) (*unstructured.Unstructured, error) {
	current, err := s.Get(gvr, namespace, name)
	if err != nil {
		return nil, err
	}
	if p := opts.Preconditions; p != nil {
		var uid types.UID
		var rv string
		if p.UID != nil {
			uid = *p.UID
		}
		if p.ResourceVersion != nil {
			rv = *p.ResourceVersion
		}
		if err := preconditions(gvr, current, uid, rv); err != nil {
			return nil, err
		}
	}
	if len(current.GetFinalizers()) > 0 {
		if current.GetDeletionTimestamp() != nil {
			return current, nil
		}
		next := current.DeepCopy()
		ts := metav1.NewTime(s.now().Truncate(time.Second))
		next.SetDeletionTimestamp(&ts)
		next.SetResourceVersion(s.nextRV())
		s.objects[gvr][key(namespace, name)] = next.DeepCopy()
		s.record(gvr, watch.Modified, next, current)
		return next, nil
	}
	delete(s.objects[gvr], key(namespace, name))
	gone := current.DeepCopy()
	gone.SetResourceVersion(s.nextRV())
	s.record(gvr, watch.Deleted, gone, current)
	return gone, nil
}

// since returns the changes of a kind after a resourceVersion, or a 410
// Gone error when history before it was compacted.
func (s *Store) since(gvr schema.GroupVersionResource, rv int64) ([]event, error) {
	if rv < s.compacted {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))
	}
	h := s.history[gvr]
	i, _ := slices.BinarySearchFunc(h, rv+1, func(e event, rv int64) int { return int(e.rv - rv) })
	return h[i:], nil
}

// Compact drops the history of changes: watches that resume from before
// now get 410 Gone.
func (s *Store) Compact() {
	s.compacted = s.rv
	for gvr := range s.history {
		s.history[gvr] = nil
	}
}

// Stored lists the stored objects of a kind, sorted by key, without
// copying them: for readers that change nothing.
func (s *Store) Stored(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	keys := make([]string, 0, len(s.objects[gvr]))
	for k := range s.objects[gvr] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	objs := make([]*unstructured.Unstructured, len(keys))
	for i, k := range keys {
		objs[i] = s.objects[gvr][k]
	}
	return objs
}

// Peek returns one stored object without copying it, or nil: for readers
// that change nothing.
func (s *Store) Peek(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	return s.objects[gvr][key(namespace, name)]
}

// Objects lists copies of all objects of a kind, sorted by key: for the
// actors, which change them.
func (s *Store) Objects(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	items, _ := s.list(gvr, "", labels.Everything())
	return items
}
