package remediation

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/internal/inflight"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// What the caches may fail to show, looked up at the API server instead:
// creates and control-plane reservations their informers have not shown
// within a minute, and creates whose fate the API server did not tell.

// logCreateUnseen is logged at level 2 when the API server has a created
// resource that its informer has not shown within inflight.TTL.
const logCreateUnseen = "Created remediation not shown by its informer yet; its node waits"

// LookUpLapsed looks up at the API server the creates of every
// NodeHealthCheck that the informers have not shown within inflight.TTL,
// or whose create's fate the API server did not tell, syncing or not: a
// disabled NodeHealthCheck does not sync, and its create would otherwise
// lapse and let another one remediate the node beside it.
// One the API server has is expected again: its node gets no new action,
// and its status keeps the resource, until the informer shows it; believing
// the cache instead, when a watch stops sending, would drop it from the
// status and create a second remediation beside it. One that is gone
// lapses; one whose look-up gets no answer (forbidden, or any error) is
// expected again, and looked up again soon (inflight.Ledger.Retry).
// A create that holds the control-plane slot is looked up the same way,
// whoever owns what is found: one found and not shown, or unknown, holds
// the slot on.
func (w *Writer) LookUpLapsed(ctx context.Context) {
	for _, l := range w.ledger.Lapsed() {
		found, ours := w.lookUp(ctx, l)
		switch {
		case found == unknown:
			w.ledger.Retry(l)
		case found == unshown && ours && !l.Shown:
			klog.FromContext(ctx).V(2).Info(logCreateUnseen, "nodeHealthCheck", l.NHC, "node", l.Node, "resource", l.Resource, "name", l.Name)
		case found == unshown && l.ControlPlane:
			w.ledger.KeepSlot(l)
		default:
			w.ledger.Drop(l)
		}
	}
}

// presence is what a look-up found of a create's resource.
type presence int

const (
	// gone: not there, or shown by its informer.
	gone presence = iota
	// unshown: there, and its informer does not show it.
	unshown
	// unknown: the API server did not answer.
	unknown
)

// lookUp reads a lapsed create's resource at the API server: whether it
// is there without its informer showing it, and whether it is the
// NodeHealthCheck's own.
func (w *Writer) lookUp(ctx context.Context, l inflight.Lapsed) (found presence, ours bool) {
	obj, err := w.client.get(ctx, l.Resource, l.Namespace, l.Name)
	switch {
	case apierrors.IsNotFound(err):
		return gone, false
	case apierrors.IsForbidden(err) && !w.templates.Served(ctx, l.Resource):
		// Uninstalled with its role: its resources went with its CRD,
		// and counting them as there would hold their nodes, or the
		// control-plane slot, for good.
		return gone, false
	case err != nil:
		return unknown, false
	}
	ours = slices.Contains(resource.OwnerNames(obj), l.NHC)
	if cached := w.informers.Get(l.Resource, l.Namespace, l.Name); cached != nil && cached.GetUID() == obj.GetUID() {
		return gone, ours
	}
	return unshown, ours
}
