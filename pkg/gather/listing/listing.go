// Package listing is the gather.Source of kubectl nhc: the cluster as the
// API server lists it once, read as the controller's caches hold it. It
// never writes; what it cannot read it says through a warning, and leaves
// out.
package listing

import (
	"context"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/templates"
)

// Warnings of what cannot be read.
const (
	// warnNoLeases (namespace, error): verdicts go without the leases.
	warnNoLeases = "cannot list the node leases in namespace %s, so verdicts ignore them (a node in maintenance may show as remediated): %v"
	// warnNoRemediations (resource, error): the controller watches
	// remediation resources in every namespace, and so they are listed.
	warnNoRemediations = "cannot list %s in every namespace, so their remediations are not shown: %v"
)

// Clients are what the cluster is read with.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// LeaseNamespace is where the node leases live.
	LeaseNamespace string
}

// Cluster is the cluster listed once: the NodeHealthChecks and nodes its
// caller listed, and the remediation resources and node leases it lists
// when first asked.
type Cluster struct {
	clients Clients
	nhcs    []*v1alpha1.NodeHealthCheck
	// nodes are in the order listed; byName finds them.
	nodes  []*nodeview.Node
	byName map[string]*nodeview.Node
	warn   func(string)
	// kinds are the remediation kinds every NodeHealthCheck uses, by kind:
	// those its templates generate and those its status records.
	kinds map[schema.GroupVersionKind]schema.GroupVersionResource
	// listed are the resources of each kind; failed are the kinds whose
	// list failed.
	listed map[schema.GroupVersionResource][]unstructured.Unstructured
	failed map[schema.GroupVersionResource]bool
	leases *health.Leases
	read   bool
}

// New returns the cluster of these NodeHealthChecks and nodes; warn hears
// of what cannot be read, once each.
func New(clients Clients, nhcs []*v1alpha1.NodeHealthCheck, nodes []*nodeview.Node, warn func(string)) *Cluster {
	byName := make(map[string]*nodeview.Node, len(nodes))
	for _, node := range nodes {
		byName[node.Name] = node
	}
	return &Cluster{clients: clients, nhcs: nhcs, nodes: nodes, byName: byName, warn: warn}
}

// Others lists the NodeHealthChecks listed but nhc.
func (c *Cluster) Others(nhc *v1alpha1.NodeHealthCheck) []*v1alpha1.NodeHealthCheck {
	return slices.DeleteFunc(slices.Clone(c.nhcs), func(other *v1alpha1.NodeHealthCheck) bool { return other.UID == nhc.UID })
}

// Peers lists the other NodeHealthChecks with a valid selector: an invalid
// one selects no node of another.
func (c *Cluster) Peers(nhc *v1alpha1.NodeHealthCheck) []health.SelectingPeer {
	var peers []health.SelectingPeer
	for _, other := range c.Others(nhc) {
		selector, problem := health.ParseSelector(&other.Spec.Selector)
		if problem != nil {
			continue
		}
		peers = append(peers, health.SelectingPeer{Peer: health.Peer{Name: other.Name, UID: other.UID, Created: other.CreationTimestamp.Time},
			Selector: selector, Conditions: other.Spec.UnhealthyConditions})
	}
	return peers
}

// Selected lists the nodes the selector matches, in the order listed. It
// leaves none out: kubectl nhc shows every node's verdict.
func (c *Cluster) Selected(_ context.Context, _ *v1alpha1.NodeHealthCheck, selector labels.Selector, _ *gather.LeaveOut) (gather.Selection, error) {
	sel := gather.Selection{CaughtUp: true}
	for _, node := range c.nodes {
		if selector.Matches(node.Labels) {
			sel.Nodes = append(sel.Nodes, node)
		}
	}
	return sel, nil
}

// Node reads a listed node.
func (c *Cluster) Node(name string) (*nodeview.Node, error) {
	if node, ok := c.byName[name]; ok {
		return node, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// Remediations reads what nhc's remediation resources show: its templates
// checked by the controller's rules, its resources and those of others in
// every kind any NodeHealthCheck uses, and the node leases. Nothing is
// under way, and every kind counts as known.
func (c *Cluster) Remediations(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (gather.Seen, error) {
	c.readAll(ctx)
	seen := gather.Seen{Ready: true, Remediations: map[string][]health.Remediation{}, Leases: c.leases}
	seen.Problem = c.templates(ctx, nhc)
	ownKinds := c.kindsOf(ctx, nhc)
	seen.Unreadable = map[schema.GroupVersionKind]bool{}
	seenUIDs := map[types.UID]bool{}
	for gvk, gvr := range c.kindsWith(ownKinds) {
		c.list(ctx, gvr)
		if c.failed[gvr] {
			seen.Unreadable[gvk] = true
		}
		for i := range c.listed[gvr] {
			obj := &c.listed[gvr][i]
			if seenUIDs[obj.GetUID()] {
				continue
			}
			seenUIDs[obj.GetUID()] = true
			node := resource.TargetNode(obj)
			if resource.OwnedBy(obj, nhc) {
				seen.Remediations[node] = append(seen.Remediations[node], resource.Summarize(obj))
			}
			if resource.ForControlPlaneNode(obj) && !slices.Contains(seen.ControlPlane, node) {
				seen.ControlPlane = append(seen.ControlPlane, node)
			}
			for _, owner := range resource.Owners(obj) {
				if owner.UID != nhc.UID && !slices.Contains(seen.OtherOwners[node], owner) {
					if seen.OtherOwners == nil {
						seen.OtherOwners = map[string][]resource.Owner{}
					}
					seen.OtherOwners[node] = append(seen.OtherOwners[node], owner)
				}
			}
		}
	}
	return seen, nil
}

// readAll lists, once, the remediation kinds of every NodeHealthCheck
// listed and their resources, and the node leases.
func (c *Cluster) readAll(ctx context.Context) {
	if c.read {
		return
	}
	c.read = true
	c.kinds = map[schema.GroupVersionKind]schema.GroupVersionResource{}
	c.listed = map[schema.GroupVersionResource][]unstructured.Unstructured{}
	c.failed = map[schema.GroupVersionResource]bool{}
	for _, nhc := range c.nhcs {
		for gvk, gvr := range c.kindsOf(ctx, nhc) {
			c.kinds[gvk] = gvr
		}
	}
	for _, gvr := range c.kinds {
		c.list(ctx, gvr)
	}
	c.leases = c.nodeLeases(ctx)
}

// kindsOf maps the remediation kinds a NodeHealthCheck uses: those its
// templates generate, and those its status records. A kind the API does not
// serve has no resources.
func (c *Cluster) kindsOf(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) map[schema.GroupVersionKind]schema.GroupVersionResource {
	kinds := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	read, _, _ := templates.ReadAll(ctx, c.clients.Mapper, c.clients.Dynamic, nhc.Spec.TemplateRefs())
	for _, tmpl := range read {
		kinds[tmpl.Remediation.GroupVersion().WithKind(health.RemediationKind(tmpl.Ref.Kind))] = tmpl.Remediation
	}
	for _, rem := range nhc.Status.RecordedRemediations() {
		gvk := rem.Resource.GroupVersionKind()
		if _, ok := kinds[gvk]; ok {
			continue
		}
		if m, err := c.clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			kinds[gvk] = m.Resource
		}
	}
	return kinds
}

// kindsWith are every NodeHealthCheck's kinds and these, listing those not
// listed yet.
func (c *Cluster) kindsWith(more map[schema.GroupVersionKind]schema.GroupVersionResource) map[schema.GroupVersionKind]schema.GroupVersionResource {
	all := make(map[schema.GroupVersionKind]schema.GroupVersionResource, len(c.kinds)+len(more))
	for gvk, gvr := range c.kinds {
		all[gvk] = gvr
	}
	for gvk, gvr := range more {
		all[gvk] = gvr
	}
	return all
}

// list lists the resources of a kind in every namespace, as the
// controller's informers watch them (a remediator may keep its resources
// elsewhere than its templates), once. A kind the API no longer serves has
// none; one that cannot be listed otherwise is unreadable.
func (c *Cluster) list(ctx context.Context, gvr schema.GroupVersionResource) {
	if _, ok := c.listed[gvr]; ok || c.failed[gvr] {
		return
	}
	list, err := c.clients.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.listed[gvr] = nil
	case err != nil:
		c.warn(fmt.Sprintf(warnNoRemediations, gvr.Resource, err))
		c.failed[gvr] = true
	default:
		c.listed[gvr] = list.Items
	}
}

// templates checks nhc's templates as the controller does; what cannot be
// read is left out of the check, and said.
func (c *Cluster) templates(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) *health.Problem {
	_, problem, unreadable := templates.ReadAll(ctx, c.clients.Mapper, c.clients.Dynamic, nhc.Spec.TemplateRefs())
	for _, err := range unreadable {
		c.warn(err.Error())
	}
	return problem
}

// nodeLeases lists the node leases, at the controller's default durations;
// when they cannot be read, verdicts go without them, and say so.
func (c *Cluster) nodeLeases(ctx context.Context) *health.Leases {
	list, err := c.clients.Kube.CoordinationV1().Leases(c.clients.LeaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.warn(fmt.Sprintf(warnNoLeases, c.clients.LeaseNamespace, err))
		return nil
	}
	all := make([]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return nodeleases.Of(all, health.DefaultLeaseDuration, health.DefaultLeaseBuffer)
}
