package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodecache"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/resource"
)

// What to do about the errors users meet first.
const (
	hintNotInstalled = "the NodeHealthCheck API (remediation.medik8s.io/v1alpha1) is not installed in this cluster: install nhc-controller with kubectl apply -k manifests/"
	hintNoAccess     = "you may not %s %s: ask for the view ClusterRole (it includes NodeHealthChecks) or the nhc-controller-nodehealthcheck-editor role"
	hintNoSuchNHC    = "NodeHealthCheck %q not found: kubectl get nhc lists them"
	warnNoLeases     = "cannot list the node leases in namespace %s, so verdicts ignore them (a node in maintenance may show as remediated): %v"
	// warnNoRemediations (resource, error): kubectl nhc lists remediation
	// resources in every namespace, as the controller watches them.
	warnNoRemediations = "cannot list %s in every namespace, so their remediations are not shown: %v"
)

// cluster reads what the controller reads: NodeHealthChecks, nodes,
// templates and remediation resources. It never writes.
type cluster struct {
	nhcs    versioned.Interface
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	// listed caches the remediation resources of one kind, by its resource.
	listed map[string][]unstructured.Unstructured
	// leaseNamespace is where the node leases live; leases caches them once read.
	leaseNamespace string
	leases         *health.Leases
	leasesRead     bool
	// all are every NodeHealthCheck, as last listed, for the overlap rule;
	// ownersByNode are the owners of their resources, read once.
	all          []v1alpha1.NodeHealthCheck
	ownersByNode map[string][]resource.Owner
	// busyControlPlane are the control-plane nodes under remediation, read once.
	busyControlPlane map[string]bool
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
func (c *cluster) nodes(ctx context.Context) ([]*health.Node, error) {
	list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, readError(err, "list", "nodes")
	}
	nodes := make([]*health.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = nodecache.NodeOf(&list.Items[i])
	}
	return nodes, nil
}

// selects returns the nodes a NodeHealthCheck's selector matches; an
// invalid selector matches none.
func selects(nhc *v1alpha1.NodeHealthCheck, nodes []*health.Node) []*health.Node {
	selector, problem := health.ParseSelector(&nhc.Spec.Selector)
	if problem != nil {
		return nil
	}
	var selected []*health.Node
	for _, node := range nodes {
		if selector.Matches(node.Labels) {
			selected = append(selected, node)
		}
	}
	return selected
}

// input gathers what the controller's engine reads to decide for a
// NodeHealthCheck now, as the controller would gather it: its templates
// checked with the controller's rules, its resources by owner, the
// control-plane nodes under remediation, the nodes that are gone, and the
// other NodeHealthChecks that claim its nodes.
func (c *cluster) input(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, nodes []*health.Node, now time.Time) health.Input {
	in := health.Input{NHC: nhc, Nodes: selects(nhc, nodes), Remediations: map[string][]health.Remediation{}, Leases: c.nodeLeases(ctx), Now: now}
	templates, problem, unreadable := remediation.ReadTemplates(ctx, c.mapper, c.dynamic, nhc.Spec.TemplateRefs())
	in.RemediationProblem = problem
	for _, err := range unreadable {
		c.warn(err.Error())
	}
	for _, tmpl := range templates {
		for _, obj := range c.remediationResources(ctx, tmpl) {
			if resource.OwnedBy(&obj, nhc) {
				node := resource.TargetNode(&obj)
				in.Remediations[node] = append(in.Remediations[node], resource.Summarize(&obj))
			}
		}
	}
	in.BusyControlPlaneNodes = c.busyControlPlaneNodes(ctx)
	exists := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		exists[node.Name] = true
	}
	for node := range in.Remediations {
		if !exists[node] {
			if in.DeletedNodes == nil {
				in.DeletedNodes = map[string]bool{}
			}
			in.DeletedNodes[node] = true
		}
	}
	in.Claims = c.claims(ctx, nhc, in.Nodes)
	in.MaxCreations, in.CreatesHeld = health.GuardedCreations(&nhc.Status, in.Remediations, nil, 0)
	return in
}

// busyControlPlaneNodes are the control-plane nodes under remediation, as
// the controller counts them: with a remediation resource of any owner and
// of any kind that any NodeHealthCheck uses. Read once.
func (c *cluster) busyControlPlaneNodes(ctx context.Context) map[string]bool {
	if c.busyControlPlane != nil {
		return c.busyControlPlane
	}
	c.busyControlPlane = map[string]bool{}
	for i := range c.all {
		templates, _, _ := remediation.ReadTemplates(ctx, c.mapper, c.dynamic, c.all[i].Spec.TemplateRefs())
		for _, tmpl := range templates {
			for _, obj := range c.remediationResources(ctx, tmpl) {
				if resource.ForControlPlaneNode(&obj) {
					c.busyControlPlane[resource.TargetNode(&obj)] = true
				}
			}
		}
	}
	return c.busyControlPlane
}

// remediationResources lists the resources a template's kind generates, in
// every namespace, as the controller's informers watch them (a remediator
// may keep its resources elsewhere than its templates), once per kind.
func (c *cluster) remediationResources(ctx context.Context, tmpl remediation.Template) []unstructured.Unstructured {
	key := tmpl.Remediation.String()
	if list, ok := c.listed[key]; ok {
		return list
	}
	list, err := c.dynamic.Resource(tmpl.Remediation).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.warn(fmt.Sprintf(warnNoRemediations, tmpl.Remediation.Resource, err))
		c.listed[key] = nil
		return nil
	}
	c.listed[key] = list.Items
	return list.Items
}

// nodeLeases reads the node leases once, at the controller's default
// durations; when they cannot be read, verdicts go without them and say so.
func (c *cluster) nodeLeases(ctx context.Context) *health.Leases {
	if c.leasesRead {
		return c.leases
	}
	c.leasesRead = true
	list, err := c.kube.CoordinationV1().Leases(c.leaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.warn(fmt.Sprintf(warnNoLeases, c.leaseNamespace, err))
		return nil
	}
	all := make([]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	c.leases = nodeleases.Of(all, health.DefaultLeaseDuration, health.DefaultLeaseBuffer)
	return c.leases
}

func (c *cluster) warn(warning string) {
	if !slices.Contains(c.warnings, warning) {
		c.warnings = append(c.warnings, warning)
	}
}
