package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	remediationclient "github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned/typed/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// apiServer is what a sync sends to the API server past its caches, one
// seam a role, and the window its writes must land in. The parts of a sync
// that send share the one value.
type apiServer struct {
	writer remediationWriter
	// leases takes node leases; nil when the controller takes none.
	leases   nodeLeases
	statuses statusWriter
	liveNHCs liveNHCs
	// writesUntil bounds every write (Config.WritesUntil).
	writesUntil writesUntil
}

// writesUntil says until when this replica may write (zero: no end), or
// why it may not write now.
type writesUntil func() (time.Time, error)

// context is ctx, ending when this replica may no longer write (the client
// tells the API server, so that a write sent never lands later), or why it
// may not write now.
func (w writesUntil) context(ctx context.Context) (context.Context, context.CancelFunc, error) {
	until, err := w()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("not acting: %w", err)
	case until.IsZero():
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

// remediationObserver keeps the kinds of NodeHealthChecks' templates and
// remediation resources watched, and reads them from the caches:
// *remediation.Observer, or a fake in tests.
type remediationObserver interface {
	// WatchAll watches the kinds of every NodeHealthCheck list returns,
	// until it succeeded once: before, no control-plane remediation starts.
	// ctx bounds its reads (discovery).
	WatchAll(ctx context.Context, list func() ([]*v1alpha1.NodeHealthCheck, error)) error
	// Watch keeps the kinds a NodeHealthCheck's templates and resources
	// are of watched, reads its templates, and maps the kinds the others'
	// statuses record; ctx bounds its reads (discovery, templates read with
	// GET).
	Watch(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, others []*v1alpha1.NodeHealthCheck) (*remediation.Watched, error)
	// Read reads what a NodeHealthCheck's remediation resources show, from
	// the caches.
	Read(nhc *v1alpha1.NodeHealthCheck, watched *remediation.Watched) (gather.Seen, error)
	// Forget drops what is kept for a deleted NodeHealthCheck.
	Forget(nhc string)
	// WatchLeft reads what may still hold the nodes whose lease a deleted
	// NodeHealthCheck holds, watching again a kind that could not be read.
	WatchLeft(nhc string) (remediation.Left, error)
}

// remediationWriter writes remediation resources and node annotations, one
// write a call: *remediation.Writer, or a fake in tests.
type remediationWriter interface {
	// Create creates a node's remediation resource; remediation.Refused
	// tells an error that makes the node wait.
	Create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, c health.Creation, watched *remediation.Watched) (health.Created, error)
	Delete(ctx context.Context, nhc string, watched *remediation.Watched, del health.Deletion) (gone bool, err error)
	// Annotate sets an annotation of a remediation resource, or removes it
	// when value is nil.
	Annotate(ctx context.Context, watched *remediation.Watched, ref corev1.ObjectReference, key string, value *string) error
	RemoveNodeAnnotation(ctx context.Context, node, key string) error
	// LookUpLapsed looks up at the API server the creates the informers
	// have not shown in time.
	LookUpLapsed(ctx context.Context)
}

// nodeLeases takes, renews and releases node leases: *nodeleases.Keeper.
type nodeLeases interface {
	Acquire(ctx context.Context, req health.LeaseRequest) error
	Renew(ctx context.Context, req health.LeaseRequest) error
	Release(ctx context.Context, node, holder string) error
	// Problem says why a lease could not be taken when the node must wait
	// for it, or "" for an error worth a retry.
	Problem(err error) string
}

// remediationChanges tells of changes of remediation resources and
// templates, and of kinds whose informer synced or failed.
type remediationChanges interface {
	AddChangeHandler(handler remediation.ResourceChangeFunc)
	AddKindChangeHandler(handler remediation.KindChangeFunc)
	AddSlotFreedHandler(handler func())
}

// leaseChanges tells of node leases that changed hands.
type leaseChanges interface {
	AddChangeHandler(handler nodeleases.HolderChangeFunc) error
}

// NodeCache is the node informer: *nodecache.Informer, or one whose reads
// at the API server are faked in tests.
type NodeCache interface {
	Informer() cache.SharedIndexInformer
	Lister() nodecache.Lister
	nodePacing
	liveNodes
}

// nodePacing paces the node cache's reads.
type nodePacing interface {
	// ReadAtOnceFrom says from when a NodeHealthCheck may create a
	// remediation (zero: not at all): from then on, the batch window is
	// off. A sync tells it twice: before its acts (health.Plan.CreatesFrom),
	// and once its creates went out (health.Plan.CreatesFromAfter).
	ReadAtOnceFrom(nhc string, from time.Time)
}

// liveNodes reads nodes at the API server, past the cache.
type liveNodes interface {
	// Versions returns the resourceVersion of each node the selector
	// matches, from a consistent list.
	Versions(ctx context.Context, selector labels.Selector) (map[string]string, error)
	// Node reads a node, consistently when notOlderThan is "", else at
	// least as new as that resourceVersion of an earlier read; it returns
	// the read's resourceVersion, also with a NotFound error when the node
	// is gone.
	Node(ctx context.Context, name, notOlderThan string) (*nodeview.Node, string, error)
	// InitialListVersion is the resourceVersion of the list the node cache
	// started from, once it holds it; "" when unknown.
	InitialListVersion() string
}

// liveNHCs reads NodeHealthChecks at the API server, past the cache.
type liveNHCs interface {
	// Metadata reads a NodeHealthCheck's metadata, whose identity and
	// generation tell a spec change; a NotFound error when it is gone.
	Metadata(ctx context.Context, name string) (*metav1.ObjectMeta, error)
	// Get reads a whole NodeHealthCheck, which the cache is behind on.
	Get(ctx context.Context, name string) (*v1alpha1.NodeHealthCheck, error)
}

// statusWriter writes a NodeHealthCheck's status subresource.
type statusWriter interface {
	UpdateStatus(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (*v1alpha1.NodeHealthCheck, error)
	// PatchStatus merges a status into an object that cannot be decoded,
	// if it still has the resourceVersion given.
	PatchStatus(ctx context.Context, name, resourceVersion string, status v1alpha1.NodeHealthCheckStatus) error
}

// clientNHCs reads NodeHealthChecks and writes their statuses through the
// clientset.
type clientNHCs struct {
	client remediationclient.RemediationV1alpha1Interface
}

// metadataOnly asks for objects' metadata alone. A status lists up to
// 5,000 nodes: in a storm of 300 the stored NodeHealthCheck is 125 KB, and
// the controller decodes 1 KB. A server that cannot send the metadata alone
// sends the objects, whose metadata decodes the same.
const metadataOnly = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

// Metadata is a consistent list of the one NodeHealthCheck by name, which
// the API server serves from its watch cache once the cache has caught up
// with etcd, as for nodes (nodecache.Informer.Node): a get would read and
// decode the whole stored object from etcd, and every create of the sync
// waits for this read.
func (w clientNHCs) Metadata(ctx context.Context, name string) (*metav1.ObjectMeta, error) {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	raw, err := w.client.RESTClient().Get().Resource("nodehealthchecks").
		VersionedParams(&opts, metav1.ParameterCodec).SetHeader("Accept", metadataOnly).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding the metadata of NodeHealthCheck %s: %w", name, err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i].ObjectMeta, nil
		}
	}
	return nil, apierrors.NewNotFound(v1alpha1.Resource("nodehealthchecks"), name)
}

func (w clientNHCs) Get(ctx context.Context, name string) (*v1alpha1.NodeHealthCheck, error) {
	nhc, err := w.client.NodeHealthChecks().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		dropManagedFields(nhc)
	}
	return nhc, err
}

// writtenMetadataOnly asks for a written object's metadata alone.
const writtenMetadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// UpdateStatus writes a status and reads back the written object's
// metadata alone: the status subresource stores the status as sent (the
// CRD defaults none of it, and a status the schema would prune fails
// validation first), so the controller has the rest. The whole object, as
// the typed client reads it back, is encoded by the API server and
// decoded here on every write: in a trickle of overlapping incidents, a
// third of the controller's allocations. A server that cannot send the
// metadata alone sends the object, whose metadata decodes the same.
func (w clientNHCs) UpdateStatus(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (*v1alpha1.NodeHealthCheck, error) {
	sent := *nhc
	sent.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeHealthCheck"}
	body, err := json.Marshal(&sent)
	if err != nil {
		return nil, err
	}
	raw, err := w.client.RESTClient().Put().Resource("nodehealthchecks").Name(nhc.Name).SubResource("status").
		Param("fieldManager", v1alpha1.FieldManager).SetHeader("Content-Type", "application/json").
		SetHeader("Accept", writtenMetadataOnly).Body(body).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("decoding the written metadata of NodeHealthCheck %s: %w", nhc.Name, err)
	}
	// The caches' objects are never changed, so the written one shares
	// the sent one's spec and status.
	written := *nhc
	written.ObjectMeta = meta.ObjectMeta
	dropManagedFields(&written)
	return &written, nil
}

// PatchStatus sends a JSON merge patch, and reads nothing back: the stored
// object cannot be decoded.
func (w clientNHCs) PatchStatus(ctx context.Context, name, resourceVersion string, status v1alpha1.NodeHealthCheckStatus) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion}, "status": status})
	if err != nil {
		return err
	}
	return w.client.RESTClient().Patch(types.MergePatchType).Resource("nodehealthchecks").Name(name).SubResource("status").
		Param("fieldManager", v1alpha1.FieldManager).Body(patch).Do(ctx).Error()
}
