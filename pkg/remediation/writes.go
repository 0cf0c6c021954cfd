package remediation

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// Create creates a node's remediation resource from a template that Watch
// read, in a kind it resolved. It is refused (Refused) before it is sent when the node's first
// remediation belongs to another NodeHealthCheck, or another control-plane
// node's remediation started meanwhile; and after, when a resource of
// someone else stands where it would, or admission refused it.
func (w *Writer) Create(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, c health.Creation, watched *Watched) (health.Created, error) {
	template := watched.template(c.Template)
	if template == nil {
		return health.Created{}, fmt.Errorf("template %s %s/%s was not read", c.Template.Kind, c.Template.Namespace, c.Template.Name)
	}
	obj, err := newRemediation(template, nhc, c.Node, c.ControlPlane)
	if err != nil {
		return health.Created{}, err
	}
	gvr, err := watched.resource(obj.GroupVersionKind())
	if err != nil {
		return health.Created{}, err
	}
	key := inflight.CreateKey(nhc.Name, gvr, obj.GetNamespace(), c.Node, template.GetName())
	// The plan decided from caches that may not show another
	// NodeHealthCheck's resource for the node yet (a selector changed a
	// moment ago): a first remediation is checked against them again.
	otherOwner := func() string { return w.informers.OtherOwner(c.Node, nhc.UID) }
	if err := w.ledger.Book(key, nhc.UID, obj.GetName(), c.FirstResource, c.ControlPlane, otherOwner); err != nil {
		return health.Created{}, err
	}
	created, err := w.client.Create(ctx, gvr, obj, nhc)
	err = w.checkAccess(ctx, "create", gvr, obj.GetNamespace(), err)
	switch {
	case err != nil && certainlyFailed(err):
		w.ledger.Cancel(key)
	case err != nil:
		w.ledger.Unanswered(key)
	case err == nil:
		w.ledger.Created(key, created.GetUID())
		// A resource that existed already sends no new event; if the cache
		// has it, there is nothing to wait for.
		if cached := w.informers.Get(gvr, created.GetNamespace(), created.GetName()); cached != nil && cached.GetUID() == created.GetUID() {
			w.ledger.Settle(gvr, cached, false)
		}
	}
	if err != nil {
		return health.Created{}, err
	}
	return health.Created{Creation: c, Resource: resource.Reference(created), CreationTime: created.GetCreationTimestamp().Time}, nil
}

// Refused tells whether a create was refused rather than failed: its node
// waits, and the error says why.
func Refused(err error) bool {
	var notOwned *notOwnedError
	var denied *deniedError
	return errors.As(err, &notOwned) || errors.As(err, &denied) || inflight.Refused(err)
}

// Delete deletes a NodeHealthCheck's remediation resource, if it is still
// the one referenced; one gone already counts as deleted. Gone tells that
// the resource is gone (resourceClient.Delete), not held by a finalizer.
func (w *Writer) Delete(ctx context.Context, nhc string, watched *Watched, del health.Deletion) (gone bool, err error) {
	ref := del.Resource
	gvr, err := watched.resource(ref.GroupVersionKind())
	if err != nil {
		return false, err
	}
	w.ledger.ExpectDelete(nhc, del.Node, ref.UID)
	gone, err = w.client.Delete(ctx, gvr, ref)
	err = w.checkAccess(ctx, "delete", gvr, ref.Namespace, err)
	switch {
	case err != nil && certainlyFailed(err):
		w.ledger.Cancel(inflight.DeleteKey(nhc, ref.UID))
	case err == nil:
		// A resource gone already sends no new event.
		if cached := w.informers.Get(gvr, ref.Namespace, ref.Name); cached == nil || cached.GetUID() != ref.UID {
			w.ledger.Cancel(inflight.DeleteKey(nhc, ref.UID))
		}
	}
	return gone && err == nil, err
}

// Annotate sets an annotation on a remediation resource, or removes it when
// value is nil.
func (w *Writer) Annotate(ctx context.Context, watched *Watched, ref corev1.ObjectReference, key string, value *string) error {
	gvr, err := watched.resource(ref.GroupVersionKind())
	if err != nil {
		return err
	}
	err = w.client.Annotate(ctx, gvr, ref, key, value)
	err = w.checkAccess(ctx, "patch", gvr, ref.Namespace, err)
	return err
}

// RemoveNodeAnnotation removes an annotation from a node; a node that is
// gone has none.
func (w *Writer) RemoveNodeAnnotation(ctx context.Context, node, key string) error {
	return w.client.removeNodeAnnotation(ctx, node, key)
}
