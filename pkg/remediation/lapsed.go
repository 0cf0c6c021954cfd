package remediation

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// What the caches may fail to show, looked up at the API server instead:
// creates and control-plane reservations their informers have not shown
// within a minute.

// logCreateUnseen is logged at level 2 when the API server has a created
// resource that its informer has not shown within inflight.TTL.
const logCreateUnseen = "Created remediation not shown by its informer yet; its node waits"

// LookUpLapsed looks up at the API server the creates of every
// NodeHealthCheck that the informers have not shown within inflight.TTL,
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
	for _, l := range w.ledger.Lapsed() {
		switch {
		case !l.Shown && w.mayExistUnshown(ctx, l.Resource, l.Namespace, l.Name, l.NHC):
			klog.FromContext(ctx).V(2).Info(logCreateUnseen, "nodeHealthCheck", l.NHC, "node", l.Node, "resource", l.Resource, "name", l.Name)
		case l.ControlPlane && w.mayExistUnshown(ctx, l.Resource, l.Namespace, l.Name, ""):
			w.ledger.KeepSlot(l)
		default:
			w.ledger.Drop(l)
		}
	}
}

// mayExistUnshown tells whether a resource may exist at the API server,
// owned by the NodeHealthCheck owner names unless it is empty, without its
// informer showing it: found and not in the cache, or not known (any error
// but 404).
func (w *Writer) mayExistUnshown(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, owner string) bool {
	obj, err := w.client.get(ctx, gvr, namespace, name)
	switch {
	case apierrors.IsNotFound(err), err == nil && owner != "" && !slices.Contains(resource.OwnerNames(obj), owner):
		return false
	case apierrors.IsForbidden(err) && !w.templates.served(ctx, gvr):
		// Uninstalled with its role: its resources went with its CRD,
		// and counting them as there would hold their nodes, or the
		// control-plane slot, for good.
		return false
	case err == nil:
		cached := w.informers.Get(gvr, namespace, name)
		return cached == nil || cached.GetUID() != obj.GetUID()
	}
	return true
}
