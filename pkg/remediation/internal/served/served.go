// Package served tells what kinds the API server serves: it maps a template's
// kind to its resource, and lists the group versions' resources to look for
// remediation kinds.
//
// client-go's discovery client and its RESTMapper import every built-in
// API group's types (k8s.io/client-go/kubernetes/scheme); reading the
// discovery documents of the few group versions NodeHealthChecks name
// needs none of them. A group version is read once, when a kind of it is
// first mapped, and again after Reset: a kind installed or removed later
// is noticed then.
package served

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// readTimeout bounds one discovery read of a caller that carries no
// context (RESTMapping, KindFor: meta.RESTMapper's methods).
const readTimeout = 30 * time.Second

// Getter sends GET requests to absolute paths: a rest.Interface.
type Getter interface {
	Get() *rest.Request
}

// Kinds maps kinds to resources from the discovery documents of their group
// versions, read when first needed and kept until Reset.
type Kinds struct {
	client Getter

	mu sync.Mutex
	// read are the group versions read, with what each serves; a group
	// version the API server does not serve is kept as nil.
	read map[schema.GroupVersion][]metav1.APIResource
}

// New returns a mapper that reads through client.
func New(client Getter) *Kinds {
	return &Kinds{client: client, read: map[schema.GroupVersion][]metav1.APIResource{}}
}

// statusCodecs decode the API server's errors, and nothing else: the
// discovery documents are read as raw JSON.
var statusCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme)
}()

// NewForConfig returns a mapper that reads through a client of config.
func NewForConfig(config *rest.Config) (*Kinds, error) {
	config = rest.CopyConfig(config)
	config.GroupVersion, config.APIPath = &schema.GroupVersion{}, ""
	config.NegotiatedSerializer = statusCodecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, err
	}
	return New(client), nil
}

// Reset forgets what was read: the next mapping reads the API server again.
func (k *Kinds) Reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.read)
}

// RESTMapping maps a kind of one version to its resource and scope. A kind
// the API server does not serve is a meta.NoKindMatchError.
func (k *Kinds) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return nil, fmt.Errorf("mapping %s needs exactly one version, not %d", gk, len(versions))
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	return k.MappingContext(ctx, gk, versions[0])
}

// MappingContext is RESTMapping of one version, its read bounded by ctx.
func (k *Kinds) MappingContext(ctx context.Context, gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	gv := schema.GroupVersion{Group: gk.Group, Version: version}
	resources, err := k.resources(ctx, gv)
	if err != nil {
		return nil, err
	}
	return mappingIn(gv, gk, resources)
}

// mappingIn finds a kind among a group version's resources.
func mappingIn(gv schema.GroupVersion, gk schema.GroupKind, resources []metav1.APIResource) (*meta.RESTMapping, error) {
	for _, r := range resources {
		if r.Kind == gk.Kind && !strings.Contains(r.Name, "/") {
			scope := meta.RESTScopeRoot
			if r.Namespaced {
				scope = meta.RESTScopeNamespace
			}
			return &meta.RESTMapping{Resource: gv.WithResource(r.Name), GroupVersionKind: gv.WithKind(gk.Kind), Scope: scope}, nil
		}
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{gv.Version}}
}

// KindFor maps a resource of one version to its kind. A resource the API
// server does not serve is a meta.NoResourceMatchError.
func (k *Kinds) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	return k.KindForContext(ctx, gvr)
}

// KindForContext is KindFor, its read bounded by ctx.
func (k *Kinds) KindForContext(ctx context.Context, gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	resources, err := k.resources(ctx, gvr.GroupVersion())
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	for _, r := range resources {
		if r.Name == gvr.Resource {
			return gvr.GroupVersion().WithKind(r.Kind), nil
		}
	}
	return schema.GroupVersionKind{}, &meta.NoResourceMatchError{PartialResource: gvr}
}

// resources returns what a group version serves, reading it once.
func (k *Kinds) resources(ctx context.Context, gv schema.GroupVersion) ([]metav1.APIResource, error) {
	k.mu.Lock()
	resources, ok := k.read[gv]
	k.mu.Unlock()
	if ok {
		return resources, nil
	}
	list, err := k.readGroupVersion(ctx, gv)
	if err != nil {
		return nil, err
	}
	if list != nil {
		resources = list.APIResources
	}
	k.mu.Lock()
	k.read[gv] = resources
	k.mu.Unlock()
	return resources, nil
}

// readGroupVersion reads a group version's discovery document; nil when it
// is not served.
func (k *Kinds) readGroupVersion(ctx context.Context, gv schema.GroupVersion) (*metav1.APIResourceList, error) {
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	var list metav1.APIResourceList
	err := k.get(ctx, path, &list)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the discovery document of %s: %w", gv, err)
	}
	return &list, nil
}

func (k *Kinds) get(ctx context.Context, path string, into any) error {
	body, err := k.client.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

// GroupFailedError tells of the group versions whose resources could not
// be read; the others were.
type GroupFailedError struct {
	Groups map[schema.GroupVersion]error
}

func (e *GroupFailedError) Error() string {
	var parts []string
	for gv, err := range e.Groups {
		parts = append(parts, fmt.Sprintf("%s: %v", gv, err))
	}
	return "unable to read the resources of some group versions: " + strings.Join(parts, "; ")
}

// GroupsAndResources lists the resources of every version of every API
// group (the core group aside, which serves no remediation kind). A group
// version that cannot be read is left out, and named in a
// *GroupFailedError; any other error means nothing could be read.
func (k *Kinds) GroupsAndResources(ctx context.Context) ([]*metav1.APIResourceList, error) {
	var groups metav1.APIGroupList
	if err := k.get(ctx, "/apis", &groups); err != nil {
		return nil, fmt.Errorf("reading the API groups: %w", err)
	}
	var lists []*metav1.APIResourceList
	failed := map[schema.GroupVersion]error{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			gv := schema.GroupVersion{Group: g.Name, Version: v.Version}
			list, err := k.readGroupVersion(ctx, gv)
			switch {
			case err != nil:
				failed[gv] = err
			case list != nil:
				lists = append(lists, list)
			}
		}
	}
	if len(failed) > 0 {
		return lists, &GroupFailedError{Groups: failed}
	}
	return lists, nil
}

// IsGroupFailed tells whether an error only names group versions that
// could not be read.
func IsGroupFailed(err error) bool {
	var failed *GroupFailedError
	return errors.As(err, &failed)
}
