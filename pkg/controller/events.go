package controller

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// eventPrefix starts every event message, as upstream's do.
const eventPrefix = "[remediation] "

// eventRecorder records a sync's events on its NodeHealthCheck, and logs
// them.
type eventRecorder struct {
	recorder record.EventRecorder
	mu       sync.Mutex
	// lasting holds, per NodeHealthCheck, the keys of the lasting events
	// its last sync showed: each is recorded once while it lasts.
	lasting map[string]map[string]bool
}

func newEventRecorder(recorder record.EventRecorder) *eventRecorder {
	return &eventRecorder{recorder: recorder, lasting: map[string]map[string]bool{}}
}

// Record records the plan's transitions and the outcome's actions.
func (r *eventRecorder) Record(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, p *health.Plan, out *health.Outcome) {
	logger := klog.FromContext(ctx)
	for _, e := range p.EventsAfter(out) {
		r.event(nhc, e)
		if e.Reason == health.EventDetectedUnhealthy {
			logger.V(2).Info("Node detected unhealthy", "node", klog.KRef("", e.Node), "message", e.Message)
		} else {
			logger.Info("NodeHealthCheck transition", "reason", e.Reason, "node", e.Node, "message", e.Message)
		}
	}
	for _, e := range out.Events() {
		r.event(nhc, e)
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

// RecordLasting records the skip reasons and warnings that appeared since
// the last sync: they last, and each is recorded once while it lasts.
func (r *eventRecorder) RecordLasting(ctx context.Context, nhc *v1alpha1.NodeHealthCheck, p *health.Plan, out *health.Outcome) {
	logger := klog.FromContext(ctx)
	for _, e := range r.appeared(nhc.Name, p.LastingEvents(out)) {
		r.event(nhc, e)
		logger.V(2).Info("Remediation held back or warned", "reason", e.Reason, "node", e.Node, "message", e.Message)
	}
}

func (r *eventRecorder) event(nhc *v1alpha1.NodeHealthCheck, e health.Event) {
	r.recorder.Event(nhc, e.Type, e.Reason, eventPrefix+e.Message)
}

// appeared returns the lasting events that the last sync did not show, and
// keeps the current ones.
func (r *eventRecorder) appeared(nhc string, current map[string]health.Event) []health.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var appeared []health.Event
	lasting := make(map[string]bool, len(current))
	for key, e := range current {
		if !r.lasting[nhc][key] {
			appeared = append(appeared, e)
		}
		lasting[key] = true
	}
	r.lasting[nhc] = lasting
	return appeared
}

func (r *eventRecorder) Forget(nhc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lasting, nhc)
}
