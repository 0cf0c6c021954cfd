package controller

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// eventPrefix starts every event message, as upstream's do.
const eventPrefix = "[remediation] "

// recordEvents records the plan's transitions and the outcome's actions as
// events on the NodeHealthCheck, and logs them.
func (c *Controller) recordEvents(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, p *health.Plan, out *health.Outcome) {
	logger := klog.FromContext(ctx)
	for _, e := range p.Events {
		c.event(nhc, e)
		if e.Reason == health.EventDetectedUnhealthy {
			logger.V(2).Info("Node detected unhealthy", "node", klog.KRef("", e.Node), "message", e.Message)
		} else {
			logger.Info("NodeHealthCheck transition", "reason", e.Reason, "node", e.Node, "message", e.Message)
		}
	}
	for _, e := range out.Events() {
		c.event(nhc, e)
	}
	for _, created := range out.Created {
		logger.Info("Created remediation", "node", klog.KRef("", created.Node), "kind", created.Resource.Kind,
			"resource", klog.KRef(created.Resource.Namespace, created.Resource.Name), "template", created.Template.Name, "escalation", created.Escalation)
	}
	for _, to := range out.TimedOut {
		logger.Info("Remediation timed out", "node", klog.KRef("", to.Node), "kind", to.Resource.Kind, "resource", klog.KRef(to.Resource.Namespace, to.Resource.Name), "failed", to.Failed)
	}
	for _, del := range out.Deleted {
		logger.Info("Deleted remediation", "node", klog.KRef("", del.Node), "kind", del.Resource.Kind, "resource", klog.KRef(del.Resource.Namespace, del.Resource.Name), "reason", del.Reason)
	}
}

// recordLastingEvents records the skip reasons and warnings that appeared:
// they last, and each is recorded once while it lasts.
func (c *Controller) recordLastingEvents(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, p *health.Plan, out *health.Outcome) {
	logger := klog.FromContext(ctx)
	for _, e := range c.skips.appeared(nhc.Name, p.LastingEvents(out)) {
		c.event(nhc, e)
		logger.V(2).Info("Remediation held back or warned", "reason", e.Reason, "node", e.Node, "message", e.Message)
	}
}

func (c *Controller) event(nhc *v1alpha1.NodeHealthCheck, e health.Event) {
	c.recorder.Event(nhc, e.Type, e.Reason, eventPrefix+e.Message)
}

// skipMemory remembers, per NodeHealthCheck, which lasting events were recorded.
type skipMemory struct {
	mu     sync.Mutex
	active map[string]map[string]bool
}

func newSkipMemory() *skipMemory {
	return &skipMemory{active: map[string]map[string]bool{}}
}

// appeared returns the events that were not active at the last sync, and
// remembers the current ones.
func (s *skipMemory) appeared(nhc string, current map[string]health.Event) []health.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var appeared []health.Event
	active := make(map[string]bool, len(current))
	for key, e := range current {
		if !s.active[nhc][key] {
			appeared = append(appeared, e)
		}
		active[key] = true
	}
	s.active[nhc] = active
	return appeared
}

func (s *skipMemory) forget(nhc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, nhc)
}
