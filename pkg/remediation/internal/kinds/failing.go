package kinds

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
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
// grace, unless it had synced or is being retried. Any other error is
// passing (the API server unavailable, a timeout): see failedToSync.
func (inf *Informers) failed(gvr schema.GroupVersionResource, r *runningInformer, err error) {
	if !lasting(err) {
		inf.failedToSync(gvr, r, err)
		return
	}
	inf.stopFailing(gvr, err, func() bool {
		return inf.running[gvr] == r && !(inf.usedForRemediations(gvr) && r.retried == nil && !r.informer.HasSynced() && inf.clock.Since(r.started) < inf.grace)
	})
}

// failedToSync stops, to start it again PassingRetryInterval later, an
// informer that has failed to list for a passing reason since it started,
// for longer than the grace. Its reflector would retry on its own, but with
// client-go's back-off, which after half a minute of an unavailable API
// server reaches 25 to 51 s a try: that long after the API server is back,
// the NodeHealthChecks that use the kind could still not decide. A new
// informer lists at once. A synced informer keeps its cache and its
// reflector: it lists again only to resume a watch.
func (inf *Informers) failedToSync(gvr schema.GroupVersionResource, r *runningInformer, err error) {
	inf.stopFailing(gvr, err, func() bool {
		return inf.running[gvr] == r && !r.informer.HasSynced() && inf.clock.Since(r.started) >= inf.grace
	})
}

// lasting tells an error that retrying soon will not end: the kind may not
// be listed or watched, or is not served.
func lasting(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// Forbidden stops a kind's informer, as failed does, when a write of its
// resources was forbidden: its remediator's role was removed. The watch,
// authorized when it started, would go on until it expires.
func (inf *Informers) Forbidden(gvr schema.GroupVersionResource, err error) {
	inf.stopFailing(gvr, err, func() bool { return true })
}

// stopFailing stops a kind's informer for a lasting error, if it runs and
// still should (checked under the lock), and says so.
func (inf *Informers) stopFailing(gvr schema.GroupVersionResource, err error, still func() bool) {
	retry, stopped, users := inf.recordFailing(gvr, err, still)
	switch {
	case !stopped:
		return
	case retry == 0:
		klog.FromContext(inf.ctx).V(2).Info(logStoppedUnused, "resource", gvr, "err", err)
	case !lasting(err):
		klog.FromContext(inf.ctx).V(2).Info(logStoppedUnsynced, "resource", gvr, "err", err, "retryIn", retry)
	default:
		klog.FromContext(inf.ctx).V(2).Info(logStoppedFailing, "resource", gvr, "err", err, "retryIn", retry)
	}
	inf.kindChanged(gvr, users)
}

// recordFailing stops a kind's informer for a lasting error, if it runs,
// and records when to try it again (retry; 0 when nothing is kept) and
// what its cache showed. users are the NodeHealthChecks that use the kind
// when the informer was a retry that failed for the reason the try before
// it did, nil otherwise (StateChangeFunc).
func (inf *Informers) recordFailing(gvr schema.GroupVersionResource, err error, still func() bool) (retry time.Duration, stopped bool, users []string) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if !still() {
		return 0, false, nil
	}
	last := inf.stopped[gvr].shown
	if r, ok := inf.running[gvr]; ok {
		if !r.metadataOnly && !r.informer.HasSynced() {
			inf.unread[gvr] = stoppedInformer{err: err, retryAt: inf.clock.Now().Add(RetryInterval)}
		}
		if r.retried != nil && apierrors.ReasonForError(r.retried) == apierrors.ReasonForError(err) {
			users = sets.List(inf.users(gvr))
		}
		last = r.shows()
		r.stop()
		delete(inf.running, gvr)
	}
	if apierrors.IsNotFound(err) {
		// No longer served: the API server deleted its resources with its
		// CRD, whatever the cache missed of their deletion.
		last = shown{}
		delete(inf.unread, gvr)
	}
	if inf.users(gvr).Len() == 0 && last.empty() {
		// Nothing uses it and nothing is to be remembered (a kind looked
		// at for leftovers): a NodeHealthCheck that uses it later starts
		// it afresh instead of waiting out TemplateRetryInterval.
		delete(inf.stopped, gvr)
		return 0, true, users
	}
	retry = RetryInterval
	if !lasting(err) {
		retry = PassingRetryInterval
	}
	if apierrors.IsForbidden(err) && !inf.usedForRemediations(gvr) && last.empty() {
		// Templates alone, read with GET meanwhile. One no longer served
		// cannot be read at all: its CRD installed again is used within
		// RetryInterval.
		retry = TemplateRetryInterval
	}
	inf.stopped[gvr] = stoppedInformer{err: err, retryAt: inf.clock.Now().Add(retry), shown: last}
	return retry, true, users
}

// Remembering lists the kinds stopped for a lasting error, or retried after
// one, whose memory of what their cache showed holds nodes.
func (v View) Remembering() []schema.GroupVersionResource {
	v.mu.Lock()
	defer v.mu.Unlock()
	var kinds []schema.GroupVersionResource
	for gvr, s := range v.stopped {
		if !s.shown.empty() {
			kinds = append(kinds, gvr)
		}
	}
	for gvr, r := range v.running {
		if !r.remembered.empty() {
			kinds = append(kinds, gvr)
		}
	}
	return kinds
}

// ForgetUnserved drops what a kind showed when it stopped: the API no
// longer serves it, and its resources went with its CRD.
func (inf *Informers) ForgetUnserved(gvr schema.GroupVersionResource) {
	inf.mu.Lock()
	if s, ok := inf.stopped[gvr]; ok {
		s.shown = shown{}
		inf.stopped[gvr] = s
	}
	if r, ok := inf.running[gvr]; ok {
		r.remembered = shown{}
	}
	inf.mu.Unlock()
	klog.FromContext(inf.ctx).V(2).Info(logForgotUnserved, "resource", gvr)
	inf.kindChanged(gvr, nil)
}
