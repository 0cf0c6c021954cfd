package remediation

import (
	"context"
	"slices"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// What the caches may fail to show, looked up at the API server instead:
// creates and control-plane reservations their informers have not shown
// within a minute, and kinds no longer served.

// logCreateUnseen is logged at level 2 when the API server has a created
// resource that its informer has not shown within inFlightTTL.
const logCreateUnseen = "Created remediation not shown by its informer yet; its node waits"

// LookUpLapsed looks up at the API server the creates of every
// NodeHealthCheck that the informers have not shown within inFlightTTL,
// syncing or not: a disabled NodeHealthCheck does not sync, and its create
// would otherwise lapse and let another one remediate the node beside it.
// One the API server has is expected again: its node gets no new action,
// and its status keeps the resource, until the informer shows it; believing
// the cache instead, when a watch stops sending, would drop it from the
// status and create a second remediation beside it. One that is gone
// lapses; one that cannot be read (forbidden,
// or any error) is expected again, and looked up again at the next sync.
// A create that holds the control-plane slot is looked up the same way,
// whoever owns what is found: one found and not shown, or unreadable,
// holds the slot on.
func (w *Writer) LookUpLapsed(ctx context.Context) {
	for _, l := range w.inFlight.lapsed() {
		key := l.key
		switch {
		case !l.shown && w.unseen(ctx, key.resource, key.namespace, l.name, key.nhc):
			klog.FromContext(ctx).V(2).Info(logCreateUnseen, "nodeHealthCheck", key.nhc, "node", l.node, "resource", key.resource, "name", l.name)
		case l.controlPlane && w.unseen(ctx, key.resource, key.namespace, l.name, ""):
			slot := l.write
			slot.shown = true
			w.inFlight.lookedUp(l, &slot)
		default:
			w.inFlight.lookedUp(l, nil)
		}
	}
}

// unseen tells whether a resource may exist at the API server, owned by the
// NodeHealthCheck owner names unless it is empty, without its informer
// showing it: found and not in the cache, or not known (any error but 404).
func (w *Writer) unseen(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, owner string) bool {
	obj, err := w.client.get(ctx, gvr, namespace, name)
	switch {
	case apierrors.IsNotFound(err), err == nil && owner != "" && !slices.Contains(resource.OwnerNames(obj), owner):
		return false
	case apierrors.IsForbidden(err) && !w.templates.served(ctx, gvr):
		// Uninstalled with its role: its resources went with its CRD,
		// and counting them unseen would hold their nodes, or the
		// control-plane slot, for good.
		return false
	case err == nil:
		cached := w.informers.Get(gvr, namespace, name)
		return cached == nil || cached.GetUID() != obj.GetUID()
	}
	return true
}

// forgetUnserved drops what the caches of kinds stopped for a lasting
// error showed, and the ledger's creates of them, once the API no longer
// serves them (looked up again at most
// every 10 s while there are such kinds): a CRD's resources are deleted
// with it. An uninstalled kind whose role went too answers 403, not 404,
// and would otherwise hold its nodes for good.
func (o *Observer) forgetUnserved(ctx context.Context) {
	for _, gvr := range o.informers.Remembering() {
		if !o.templates.served(ctx, gvr) {
			o.inFlight.forgetKind(gvr)
			o.informers.ForgetUnserved(gvr)
		}
	}
}
