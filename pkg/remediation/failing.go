package remediation

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// Informers stopped for a lasting error: a kind that may not be listed or
// watched (403), or is no longer served (404).

// logForgotUnserved is logged at level 2 when what a kind's cache showed is
// dropped because the API no longer serves the kind.
const logForgotUnserved = "Forgot the remediation resources of a kind no longer served"

// failed stops an informer whose kind may not be listed or watched, or is no
// longer served: its cache no longer shows what the API server has, and its
// reflector would retry and log forever. A template kind's informer stops at
// once (its templates are read with GET); a remediation kind's after the
// grace, unless it had synced or is being retried.
func (m *Informers) failed(gvr schema.GroupVersionResource, r *runningInformer, err error) {
	if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		return
	}
	m.mu.Lock()
	if m.running[gvr] != r || (m.usedForRemediations(gvr) && r.retried == nil && !r.informer.HasSynced() && m.clock.Since(r.started) < m.grace) {
		m.mu.Unlock()
		return
	}
	m.stopFailing(gvr, err)
}

// forbidden stops a kind's informer, as failed does, when a write of its
// resources was forbidden: its remediator's role was removed. The watch,
// authorized when it started, would go on until it expires.
func (m *Informers) forbidden(gvr schema.GroupVersionResource, err error) {
	m.mu.Lock()
	m.stopFailing(gvr, err)
}

// stopFailing stops a kind's informer for a lasting error, if it runs, and
// records when to try it again and what its cache showed; it is called
// with m.mu held, and unlocks it.
func (m *Informers) stopFailing(gvr schema.GroupVersionResource, err error) {
	last := m.stopped[gvr].shown
	if r, ok := m.running[gvr]; ok {
		last = r.shows()
		r.stop()
		delete(m.running, gvr)
	}
	if apierrors.IsNotFound(err) {
		// No longer served: the API server deleted its resources with its
		// CRD, whatever the cache missed of their deletion.
		last = shown{}
	}
	if m.users(gvr).Len() == 0 && last.empty() {
		// Nothing uses it and nothing is to be remembered (a kind looked
		// at for leftovers): a NodeHealthCheck that uses it later starts
		// it afresh (make sim, seed 103126: it waited 10 minutes).
		delete(m.stopped, gvr)
		m.mu.Unlock()
		klog.FromContext(m.ctx).V(2).Info(logStoppedUnused, "resource", gvr, "err", err)
		m.kindChanged(gvr)
		return
	}
	retry := templateRetryInterval
	if m.usedForRemediations(gvr) || !last.empty() {
		retry = remediationRetryInterval
	}
	m.stopped[gvr] = stoppedInformer{err: err, retryAt: m.clock.Now().Add(retry), shown: last}
	m.mu.Unlock()
	klog.FromContext(m.ctx).V(2).Info(logStoppedFailing, "resource", gvr, "err", err, "retryIn", retry)
	m.kindChanged(gvr)
}

// remembering lists the kinds stopped for a lasting error, or retried after
// one, whose memory of what their cache showed holds nodes.
func (m *Informers) remembering() []schema.GroupVersionResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	var kinds []schema.GroupVersionResource
	for gvr, s := range m.stopped {
		if !s.shown.empty() {
			kinds = append(kinds, gvr)
		}
	}
	for gvr, r := range m.running {
		if !r.remembered.empty() {
			kinds = append(kinds, gvr)
		}
	}
	return kinds
}

// forgetUnserved drops what a kind showed when it stopped: the API no
// longer serves it, and its resources went with its CRD.
func (m *Informers) forgetUnserved(gvr schema.GroupVersionResource) {
	m.mu.Lock()
	if s, ok := m.stopped[gvr]; ok {
		s.shown = shown{}
		m.stopped[gvr] = s
	}
	if r, ok := m.running[gvr]; ok {
		r.remembered = shown{}
	}
	m.mu.Unlock()
	klog.FromContext(m.ctx).V(2).Info(logForgotUnserved, "resource", gvr)
	m.kindChanged(gvr)
}
