package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather/listing"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// What to do about the errors users meet first.
const (
	hintNotInstalled = "the NodeHealthCheck API (remediation.medik8s.io/v1alpha1) is not installed in this cluster: install nhc-controller with kubectl apply -k manifests/"
	hintNoAccess     = "you may not %s %s: ask for the view ClusterRole (it includes NodeHealthChecks) or the nhc-controller-nodehealthcheck-editor role"
	hintNoSuchNHC    = "NodeHealthCheck %q not found: kubectl get nhc lists them"
)

// cluster reads what the controller reads: NodeHealthChecks, nodes,
// templates and remediation resources. It never writes.
type cluster struct {
	nhcs    versioned.Interface
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	// leaseNamespace is where the node leases live.
	leaseNamespace string
	// all are every NodeHealthCheck, as last listed; listed is the cluster
	// of them, listed once, that decisions are gathered from.
	all    []v1alpha1.NodeHealthCheck
	listed *listing.Cluster
	// warnings are what could not be read, said once each.
	warnings []string
}

// readError turns an API error into one that says what to do.
func readError(err error, verb, what string) error {
	switch {
	case apierrors.IsNotFound(err) && what == "nodehealthchecks":
		return fmt.Errorf("%s", hintNotInstalled)
	case apierrors.IsForbidden(err):
		return fmt.Errorf(hintNoAccess+": %w", verb, what, err)
	}
	return fmt.Errorf("cannot %s %s: %w", verb, what, err)
}

// nodeHealthChecks lists the NodeHealthChecks, or gets one by name.
func (c *cluster) nodeHealthChecks(ctx context.Context, name string) ([]v1alpha1.NodeHealthCheck, error) {
	list, err := c.nhcs.RemediationV1alpha1().NodeHealthChecks().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError(err, "list", "nodehealthchecks")
	}
	items := list.Items
	slices.SortFunc(items, func(a, b v1alpha1.NodeHealthCheck) int { return strings.Compare(a.Name, b.Name) })
	c.all = items
	if name == "" {
		return items, nil
	}
	for _, nhc := range items {
		if nhc.Name == name {
			return []v1alpha1.NodeHealthCheck{nhc}, nil
		}
	}
	return nil, fmt.Errorf(hintNoSuchNHC, name)
}

// nodes lists every node, as the controller keeps them.
func (c *cluster) nodes(ctx context.Context) ([]*nodeview.Node, error) {
	list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError(err, "list", "nodes")
	}
	nodes := make([]*nodeview.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = nodeview.Of(&list.Items[i], nil)
	}
	return nodes, nil
}

// selects returns the nodes a NodeHealthCheck's selector matches; an
// invalid selector matches none.
func selects(nhc *v1alpha1.NodeHealthCheck, nodes []*nodeview.Node) []*nodeview.Node {
	selector, problem := health.ParseSelector(&nhc.Spec.Selector)
	if problem != nil {
		return nil
	}
	var selected []*nodeview.Node
	for _, node := range nodes {
		if selector.Matches(node.Labels) {
			selected = append(selected, node)
		}
	}
	return selected
}

// input gathers what the controller's engine reads to decide for a
// NodeHealthCheck now, as a sync gathers it (pkg/gather), from the cluster
// listed once: its templates checked by the controller's rules, its
// resources, the control-plane nodes under remediation, the nodes that are
// gone, and the other NodeHealthChecks that claim its nodes. Nothing of
// this process is under way, and its creates are bounded by the stored
// status alone.
func (c *cluster) input(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, nodes []*nodeview.Node, now time.Time) (health.Input, error) {
	if c.listed == nil {
		all := make([]*v1alpha1.NodeHealthCheck, len(c.all))
		for i := range c.all {
			all[i] = &c.all[i]
		}
		clients := listing.Clients{Kube: c.kube, Dynamic: c.dynamic, Mapper: c.mapper, LeaseNamespace: c.leaseNamespace}
		c.listed = listing.New(clients, all, nodes, c.warn)
	}
	g, err := gather.Gather(ctx, nhc, c.listed, now)
	if err != nil {
		return health.Input{}, err
	}
	in := g.Input
	in.MaxCreations, in.CreatesHeld = health.GuardedCreations(&nhc.Status, in.Remediations, g.OwnWritePending, 0)
	return in, nil
}

func (c *cluster) warn(warning string) {
	if !slices.Contains(c.warnings, warning) {
		c.warnings = append(c.warnings, warning)
	}
}
