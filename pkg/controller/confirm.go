package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// confirmMaxAge is how old the node read at the API server may be when its
// first remediation is sent: older, as after a lease write that waited for
// the client's rate limit, it is read again.
const confirmMaxAge = time.Second

// recheck reads a NodeHealthCheck and a node from the caches as they are
// just before a create, for Plan.Recheck. A node's first remediation
// reboots, fences or deletes a machine: it is confirmed against the node as
// the API server has it, which a lagging watch cannot hold back (an
// overloaded API server's watches were seen 27 s behind). Those nodes are
// read at once, while their leases are taken, so that the read adds no
// round trip to the create.
func (c *Controller) recheck(ctx context.Context, name string, plan *health.Plan) remediation.Recheck {
	confirmations := c.readNodes(ctx, plan)
	return func(ctx context.Context, cr health.Creation) (string, bool, error) {
		if _, err := c.writesUntil(); err != nil {
			return "", false, fmt.Errorf("not acting: %w", err)
		}
		var nhc *v1alpha1.NodeHealthCheck
		if cached, err := c.nhcLister.Get(name); err == nil {
			nhc = c.latest(cached)
		}
		node, err := c.nodeLister.Get(cr.Node)
		if err != nil {
			node = nil
		}
		now := c.clock.Now()
		if why := plan.Recheck(nhc, node, cr, now); why != "" || !cr.First() {
			return why, false, nil
		}
		read := confirmations[cr.Node]
		if read == nil {
			read = c.readNode(ctx, cr.Node)
		}
		live, err := read.wait(ctx, c)
		if err != nil {
			return "", false, err
		}
		if why := plan.Recheck(nhc, live, cr, now); why != "" {
			return why, true, nil
		}
		return "", false, nil
	}
}

// liveNode is a node being read at the API server.
type liveNode struct {
	name string
	done chan struct{}
	node *health.Node
	err  error
	// read is when the read was sent.
	read time.Time
}

// readNodes starts reading, at the API server, the node of each first
// remediation the plan creates.
func (c *Controller) readNodes(ctx context.Context, plan *health.Plan) map[string]*liveNode {
	reads := map[string]*liveNode{}
	for _, cr := range plan.Create {
		if cr.First() && reads[cr.Node] == nil {
			reads[cr.Node] = c.readNode(ctx, cr.Node)
		}
	}
	return reads
}

// readNode starts reading a node at the API server.
func (c *Controller) readNode(ctx context.Context, name string) *liveNode {
	l := &liveNode{name: name, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.fetch(ctx, c)
	}()
	return l
}

// fetch reads the node; a node that is gone is nil. Its age counts from
// when the read was sent.
func (l *liveNode) fetch(ctx context.Context, c *Controller) {
	l.read = c.clock.Now()
	l.node, l.err = c.liveNodes.Node(ctx, l.name)
	if apierrors.IsNotFound(l.err) {
		l.node, l.err = nil, nil
	}
}

// wait returns the node as read, read again if that is older than
// confirmMaxAge. Only the create of the node waits for it.
func (l *liveNode) wait(ctx context.Context, c *Controller) (*health.Node, error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.clock.Since(l.read) > confirmMaxAge {
		l.fetch(ctx, c)
	}
	return l.node, l.err
}
