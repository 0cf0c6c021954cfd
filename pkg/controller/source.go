package controller

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// cacheSource is the controller's gather.Source for one sync: the
// NodeHealthChecks as syncs see them, the remediation kinds as Watch left
// them, and the node cache, with the selector cache, the membership index
// and the catch-up of a first evaluation in front of it.
type cacheSource struct {
	c       *Controller
	watched *remediation.Watched
	others  []*v1alpha1.NodeHealthCheck
	// quiet are the nodes Selected left out as quiet, listed for the
	// check of Config.CheckQuiet alone.
	quiet []*nodeview.Node
}

// watch keeps a NodeHealthCheck's remediation kinds watched, and returns
// the source its decision is gathered from. The creates that the
// informers have not shown in time are looked up first, so that the
// ledger read is current.
func (c *Controller) watch(ctx context.Context, nhc *v1alpha1.NodeHealthCheck) (*cacheSource, error) {
	c.api.writer.LookUpLapsed(ctx)
	c.watchEveryKind(ctx)
	others := c.nhcs.Others(nhc)
	watched, err := c.observer.Watch(ctx, nhc, others)
	if err != nil {
		return nil, fmt.Errorf("watching remediation kinds: %w", err)
	}
	return &cacheSource{c: c, watched: watched, others: others}, nil
}

func (s *cacheSource) Others(*v1alpha1.NodeHealthCheck) []*v1alpha1.NodeHealthCheck {
	return s.others
}

func (s *cacheSource) Peers(nhc *v1alpha1.NodeHealthCheck) []health.SelectingPeer {
	return s.c.selectors.get().peersOf(nhc)
}

// Remediations reads the caches alone.
func (s *cacheSource) Remediations(_ context.Context, nhc *v1alpha1.NodeHealthCheck) (gather.Seen, error) {
	return s.c.observer.Read(nhc, s.watched)
}

// Selected reads the nodes from the membership index once the node cache
// shows them as the API server does (catchup.go), each as new as a create
// confirmed it (newernodes.go), whose nodes are named too.
func (s *cacheSource) Selected(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, selector labels.Selector, leaveOut *gather.LeaveOut) (gather.Selection, error) {
	caughtUp, err := s.c.catchUp.CaughtUp(ctx, nhc, selector)
	if err != nil {
		return gather.Selection{}, fmt.Errorf("listing the selected nodes at the API server: %w", err)
	}
	if !caughtUp {
		return gather.Selection{}, nil
	}
	if leaveOut != nil {
		leaveOut = &gather.LeaveOut{Named: append(slices.Clip(leaveOut.Named), s.c.newer.Names())}
	}
	sel, err := s.c.members.Nodes(nhc.Name, selector, health.QuietnessOf(&nhc.Spec), leaveOut, s.c.checkQuiet != nil)
	if err != nil {
		return gather.Selection{}, fmt.Errorf("listing the selected nodes: %w", err)
	}
	s.c.newer.Newest(sel.Nodes, selector)
	s.quiet = sel.quiet
	return sel.Selection, nil
}

func (s *cacheSource) Node(name string) (*nodeview.Node, error) {
	return s.c.nodeLister.Get(name)
}
