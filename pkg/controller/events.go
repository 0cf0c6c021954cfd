package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// eventPrefix starts every event message, as upstream's do.
const eventPrefix = "[remediation] "

// Event reasons the controller adds to the decision's own.
const (
	ReasonRemediationCreated  = "RemediationCreated"
	ReasonRemediationRemoved  = "RemediationRemoved"
	ReasonRemediationSkipped  = "RemediationSkipped"
	ReasonRemediationTimedOut = "RemediationTimedOut"
)

// recordEvents records the decision's transitions and the outcome's actions
// as events on the NodeHealthCheck, and logs the important ones. Skip reasons
// and warnings hold for a while: each is recorded when it appears.
func (c *Controller) recordEvents(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, d *health.Decision, out *remediation.Outcome) {
	logger := klog.FromContext(ctx)
	for _, e := range d.Events {
		c.event(nhc, e.Type, e.Reason, e.Message)
		if e.Reason == "DetectedUnhealthy" {
			logger.V(2).Info("Node detected unhealthy", "node", klog.KRef("", e.Node), "message", e.Message)
		} else {
			logger.Info(e.Message, "reason", e.Reason, "node", e.Node)
		}
	}
	for _, created := range out.Created {
		c.event(nhc, corev1.EventTypeNormal, ReasonRemediationCreated, fmt.Sprintf("Created remediation object for node %s", created.Node))
		logger.Info("Created remediation", "node", klog.KRef("", created.Node), "kind", created.Resource.Kind,
			"resource", klog.KRef(created.Resource.Namespace, created.Resource.Name), "template", created.Template.Name, "escalation", created.Escalation)
	}
	for _, to := range out.TimedOut {
		why := "its timeout passed"
		if to.Failed {
			why = "its remediator reported Succeeded=False"
		}
		c.event(nhc, corev1.EventTypeWarning, ReasonRemediationTimedOut, fmt.Sprintf("Remediation %s %s of node %s timed out: %s", to.Resource.Kind, to.Resource.Name, to.Node, why))
		logger.Info("Remediation timed out", "node", klog.KRef("", to.Node), "kind", to.Resource.Kind, "resource", klog.KRef(to.Resource.Namespace, to.Resource.Name), "failed", to.Failed)
	}
	for _, del := range out.Deleted {
		c.event(nhc, corev1.EventTypeNormal, ReasonRemediationRemoved, fmt.Sprintf("Deleted remediation CR of kind %s with name %s", del.Resource.Kind, del.Resource.Name))
		logger.Info("Deleted remediation", "node", klog.KRef("", del.Node), "kind", del.Resource.Kind, "resource", klog.KRef(del.Resource.Namespace, del.Resource.Name), "reason", del.Reason)
	}
	for _, e := range c.skips.appeared(nhc.Name, lastingEvents(d, out)) {
		c.event(nhc, e.Type, e.Reason, e.Message)
		logger.V(2).Info(e.Message, "reason", e.Reason)
	}
}

func (c *Controller) event(nhc *v1alpha1.NodeHealthCheck, eventType, reason, message string) {
	c.recorder.Event(nhc, eventType, reason, eventPrefix+message)
}

// lastingEvents are the events of states that last: why nodes wait, and
// warnings. They are keyed so that each is recorded once while it lasts.
func lastingEvents(d *health.Decision, out *remediation.Outcome) map[string]health.Event {
	events := map[string]health.Event{}
	warn := func(key, message string) {
		events[key] = health.Event{Type: corev1.EventTypeWarning, Reason: ReasonRemediationSkipped, Message: message}
	}
	for _, v := range d.Nodes {
		switch v.Waiting {
		case health.WaitMinHealthy:
			warn("minHealthy", fmt.Sprintf("Skipped remediation because the number of healthy nodes selected by the selector is %d and should equal or exceed %d", d.Healthy, d.Budget.MinHealthy))
		case health.WaitStorm:
			warn("storm", "Storm recovery active: skipping creation of new remediations")
		case health.WaitPaused:
			events["paused"] = health.Event{Type: corev1.EventTypeNormal, Reason: ReasonRemediationSkipped, Message: "Postponing potential remediations because of pause requests"}
		case health.WaitExcluded:
			warn("excluded/"+v.Node.Name, fmt.Sprintf("Remediation skipped on node %s: node has Exclude from Remediation label", v.Node.Name))
		case health.WaitControlPlane:
			warn("controlPlane/"+v.Node.Name, fmt.Sprintf("Skipping remediation of %s for preventing control plane / etcd quorum loss: another control-plane node is under remediation", v.Node.Name))
		}
	}
	for _, w := range d.Warnings {
		events["warning/"+w.Reason+"/"+w.Node] = w
	}
	for _, n := range out.NotOwned {
		warn("notOwned/"+n.Resource.Namespace+"/"+n.Resource.Name, "Skipped remediation: "+n.Error())
	}
	return events
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
