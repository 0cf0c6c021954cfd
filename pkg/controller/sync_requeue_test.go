package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// Until the informers sync, nothing is known: the status and the
// remediations are left alone, and the sync is retried soon.
func TestSyncWaitsForTheInformers(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo))
	f.remediations.seen.Ready = false
	d, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, notReadyRequeue, d)
	assert.Empty(t, f.statuses.written)
	noActions(t, f)
	assert.Empty(t, f.events())
}

// A conflict means the plan was made from stale data: the error makes the
// rate limiter retry, and the requeue still holds.
func TestSyncReturnsAStatusConflictWithTheRequeue(t *testing.T) {
	cases := []struct {
		name    string
		problem *health.Problem
		want    time.Duration
	}{
		{"the next deadline", nil, 200 * time.Second},
		{"the problem requeue", &health.Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "forbidden"}, problemRequeue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", t0.Add(-100*time.Second)))
			if tc.problem != nil {
				f.remediations.seen.Ready, f.remediations.seen.Problem = false, tc.problem
			}
			f.statuses.err = apierrors.NewConflict(schema.GroupResource{Group: "remediation.medik8s.io", Resource: "nodehealthchecks"}, "workers", errors.New("the object has been modified"))
			d, err := f.sync()
			assert.True(t, apierrors.IsConflict(err), "got %v", err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// Sync returns how soon the plan changes with no object changing: when the
// first soon-unhealthy node becomes unhealthy.
func TestSyncRequeuesAtTheNextDeadline(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  time.Duration
	}{
		{"all healthy", []*corev1.Node{healthyNode("worker-1")}, 0},
		{"soon unhealthy", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second))}, 200 * time.Second},
		{"the first deadline", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second)), notReady("worker-2", t0.Add(-250*time.Second))}, 50 * time.Second},
		{"already unhealthy", []*corev1.Node{notReady("worker-1", longAgo)}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), tc.nodes...)
			d, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// A template read with GET (its kind may not be watched) changes with no
// event: Sync requeues no later than the template is read again.
func TestSyncRequeuesNoLaterThanATemplateIsReadAgain(t *testing.T) {
	cases := []struct {
		name  string
		nodes []*corev1.Node
		want  time.Duration
	}{
		{"all healthy", []*corev1.Node{healthyNode("worker-1")}, 30 * time.Second},
		{"a later deadline", []*corev1.Node{notReady("worker-1", t0.Add(-100*time.Second))}, 30 * time.Second},
		{"a sooner deadline", []*corev1.Node{notReady("worker-1", t0.Add(-290*time.Second))}, 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), tc.nodes...)
			f.remediations.seen.RefreshAfter = 30 * time.Second
			d, err := f.sync()
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
		})
	}
}

// From when a NodeHealthCheck may create a remediation, the node cache
// reads updates as they arrive: a remediation is never created from a
// picture older than the watch's delay. Until then, once the creates due
// went out and nothing more may be, or once it is gone, it no longer asks
// for that.
func TestSyncAsksForNodeUpdatesAtOnceFromWhenACreateMayBeDue(t *testing.T) {
	f := newSyncFixture(t, workersNHC(), healthyNode("worker-1"), notReady("worker-2", t0.Add(-100*time.Second)))
	pacing := recordedPacing{}
	f.c.pacing = pacing
	_, err := f.sync()
	require.NoError(t, err)
	assert.Equal(t, t0.Add(200*time.Second), pacing["workers"], "a node waits for its deadline")

	f.setNode(t, healthyNode("worker-2"))
	_, err = f.sync()
	require.NoError(t, err)
	assert.True(t, pacing["workers"].IsZero(), "every node is healthy")

	f.setNode(t, notReady("worker-2", longAgo))
	f.remediations.createErr = apierrors.NewInternalError(errors.New("etcd is down"))
	_, err = f.sync()
	require.Error(t, err)
	assert.Equal(t, t0.Time, pacing["workers"], "a node waits for its remediation: its create failed")

	f.remediations.createErr = nil
	f.clock.Step(time.Second)
	_, err = f.sync()
	require.NoError(t, err)
	require.Len(t, f.remediations.creates(), 2, "the create that failed, then the one that went out")
	assert.True(t, pacing["workers"].IsZero(), "the create went out, of a step without a timeout: nothing more may be due")

	ref := snrOfWorker
	ref.Name = "worker-2"
	f.remediations.seen.Remediations["worker-2"] = []health.Remediation{{Ref: ref, TemplateName: snrTemplate.Name, Created: longAgo}}
	_, err = f.sync()
	require.NoError(t, err)
	assert.True(t, pacing["workers"].IsZero(), "the node is remediated by a step without a timeout")

	require.NoError(t, f.nhcs.Delete(workersNHC()))
	_, err = f.sync()
	require.NoError(t, err)
	assert.True(t, pacing["workers"].IsZero(), "the NodeHealthCheck is gone")
}

// recordedPacing is what the node cache was last told of each
// NodeHealthCheck.
type recordedPacing map[string]time.Time

func (p recordedPacing) ReadAtOnceFrom(nhc string, from time.Time) { p[nhc] = from }

// A sync whose creates failed leaves the rest of its work to the rate
// limiter's back-off, and the failed node to its retry a second later:
// requeued at once, it would hit a failing API server again every
// millisecond, taking a node lease each time.
func TestAFailedSyncLeavesItsDeferredCreatesToTheBackOff(t *testing.T) {
	cases := []struct {
		name      string
		createErr error
		want      time.Duration
	}{
		{"the creates went out", nil, time.Millisecond},
		{"a create failed", apierrors.NewInternalError(errors.New("etcd is down")), time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncFixture(t, workersNHC(), notReady("worker-1", longAgo), notReady("worker-2", longAgo), healthyNode("worker-3"))
			f.remediations.createErr = tc.createErr
			d, err := f.sync()
			assert.ErrorIs(t, err, tc.createErr)
			assert.Len(t, f.remediations.creates(), 1, "a status with no remediation yet lets one create through")
			assert.Equal(t, tc.want, d)
		})
	}
}
