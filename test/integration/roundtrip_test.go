package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions"
)

// assertSameJSON asserts that two objects are the same on the wire, which is
// what a client sees; times, for example, come back in the local zone.
func assertSameJSON(t *testing.T, want, got any, msgAndArgs ...any) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(gotJSON), msgAndArgs...)
}

// fullSpec sets every spec field that can be set together.
func fullSpec() v1alpha1.NodeHealthCheckSpec {
	return v1alpha1.NodeHealthCheckSpec{
		Selector: metav1.LabelSelector{
			MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpDoesNotExist},
			},
		},
		UnhealthyConditions: []v1alpha1.UnhealthyCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: 90 * time.Second}},
			{Type: "KernelDeadlock", Status: corev1.ConditionTrue, Duration: metav1.Duration{}},
		},
		MinHealthy:             ptr.To(intstr.FromString("60%")),
		StormCooldownDuration:  &metav1.Duration{Duration: 30 * time.Second},
		StormRecoveryThreshold: ptr.To[int32](3),
		EscalatingRemediations: []v1alpha1.EscalatingRemediation{
			{
				RemediationTemplate: corev1.ObjectReference{APIVersion: "a.example.com/v1", Kind: "ATemplate", Namespace: "ns", Name: "a"},
				Order:               1, Timeout: metav1.Duration{Duration: 5 * time.Minute},
			},
			{
				RemediationTemplate: corev1.ObjectReference{APIVersion: "b.example.com/v1", Kind: "BTemplate", Name: "b"},
				Order:               2, Timeout: metav1.Duration{Duration: time.Hour},
			},
		},
		PauseRequests: []string{"cluster upgrade by @admin"},
		HealthyDelay:  &metav1.Duration{Duration: -time.Second},
	}
}

// fullStatus sets every status field.
func fullStatus(generation int64) v1alpha1.NodeHealthCheckStatus {
	started := metav1.NewTime(time.Date(2026, 3, 20, 15, 5, 5, 0, time.UTC))
	timedOut := metav1.NewTime(started.Add(5 * time.Minute))
	return v1alpha1.NodeHealthCheckStatus{
		ObservedNodes:    ptr.To[int32](20),
		HealthyNodes:     ptr.To[int32](18),
		RemediatingNodes: ptr.To[int32](1),
		UnhealthyNodes: []*v1alpha1.UnhealthyNode{
			{
				Name: "worker-1",
				Remediations: []*v1alpha1.Remediation{
					{
						Resource:     corev1.ObjectReference{APIVersion: "a.example.com/v1", Kind: "A", Namespace: "ns", Name: "worker-1", UID: "abcd-1234"},
						Started:      started,
						TimedOut:     &timedOut,
						TemplateName: "a",
					},
					{
						Resource:     corev1.ObjectReference{APIVersion: "b.example.com/v1", Kind: "B", Name: "worker-1-x7k2p", UID: "bcde-2345"},
						Started:      metav1.NewTime(timedOut.Add(2 * time.Second)),
						TemplateName: "b",
					},
				},
				ConditionsHealthyTimestamp: &timedOut,
				HealthyDelayed:             ptr.To(true),
			},
			{Name: "worker-2"},
		},
		InFlightRemediations: map[string]metav1.Time{"worker-1": started},
		Conditions: []metav1.Condition{{
			Type: "Disabled", Status: metav1.ConditionFalse, Reason: "NodeHealthCheckEnabled",
			Message: "No issues found, NodeHealthCheck is enabled.", LastTransitionTime: started,
		}},
		Phase:                  v1alpha1.PhaseRemediating,
		Reason:                 "NHC is remediating 2 nodes",
		LastUpdateTime:         &timedOut,
		ObservedGeneration:     generation,
		StormRecoveryActive:    ptr.To(true),
		StormRecoveryStartTime: &started,
	}
}

func TestClientsetRoundTripsSpecAndStatus(t *testing.T) {
	ctx := context.Background()
	nhcs := nhcClient.RemediationV1alpha1().NodeHealthChecks()

	factory := externalversions.NewSharedInformerFactory(nhcClient, 0)
	informer := factory.Remediation().V1alpha1().NodeHealthChecks()
	statusSeen := make(chan *v1alpha1.NodeHealthCheck, 10)
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, newObj any) {
			if nhc := newObj.(*v1alpha1.NodeHealthCheck); nhc.Name == "roundtrip" && nhc.Status.Phase != "" {
				statusSeen <- nhc
			}
		},
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	created, err := nhcs.Create(ctx, &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "roundtrip"},
		Spec:       fullSpec(),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() { _ = nhcs.Delete(ctx, "roundtrip", metav1.DeleteOptions{}) }()
	assert.Equal(t, fullSpec(), created.Spec)
	assert.Empty(t, created.Status, "a create must not set the status: it is a subresource")

	created.Status = fullStatus(created.Generation)
	updated, err := nhcs.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	assertSameJSON(t, fullStatus(created.Generation), updated.Status)
	assert.Equal(t, created.Generation, updated.Generation, "a status write must not bump the generation")

	got, err := nhcs.Get(ctx, "roundtrip", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, fullSpec(), got.Spec)
	assertSameJSON(t, fullStatus(created.Generation), got.Status)

	select {
	case seen := <-statusSeen:
		assertSameJSON(t, fullStatus(created.Generation), seen.Status, "the informer delivers the status")
	case <-time.After(30 * time.Second):
		t.Fatal("the informer did not see the status update")
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cached, err := informer.Lister().Get("roundtrip")
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && cached.ResourceVersion == updated.ResourceVersion, err
	}))
	cached, err := informer.Lister().Get("roundtrip")
	require.NoError(t, err)
	assertSameJSON(t, fullStatus(created.Generation), cached.Status, "the lister serves the status")

	// A write to the main resource must not change the status.
	got.Spec.PauseRequests = nil
	got.Status = v1alpha1.NodeHealthCheckStatus{}
	afterSpecUpdate, err := nhcs.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assertSameJSON(t, fullStatus(created.Generation), afterSpecUpdate.Status)
	assert.Equal(t, created.Generation+1, afterSpecUpdate.Generation)
}

func TestStatusSubresourceValidatesUnhealthyNodes(t *testing.T) {
	ctx := context.Background()
	nhcs := nhcClient.RemediationV1alpha1().NodeHealthChecks()
	created, err := nhcs.Create(ctx, &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "status-keys"},
		Spec:       fullSpec(),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() { _ = nhcs.Delete(ctx, created.Name, metav1.DeleteOptions{}) }()

	created.Status.UnhealthyNodes = []*v1alpha1.UnhealthyNode{{Name: "worker-1"}, {Name: "worker-1"}}
	_, err = nhcs.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Duplicate value")
}
