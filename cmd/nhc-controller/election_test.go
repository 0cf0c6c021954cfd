package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
)

// A standby is ready once its caches synced and it knows who leads; its
// health does not depend on the lease.
func TestProbesOfAStandby(t *testing.T) {
	now := time.Now()
	clk := clocktesting.NewFakeClock(now)
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "nhc-system", Name: "nhc"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now}},
	})
	opts := defaultOptions()
	elector, err := election.New(election.Config{
		Leases: client.CoordinationV1().Leases("nhc-system"), Namespace: "nhc-system", Name: "nhc", Identity: "me",
		LeaseDuration: opts.leaseDuration, RenewDeadline: opts.renewDeadline, RetryPeriod: opts.retryPeriod,
		Callbacks: election.Callbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
		Clock:     clk,
	})
	require.NoError(t, err)
	synced := false
	handler := probes(func() bool { return synced }, elector, opts.renewDeadline)
	probe := func(path string) int {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code
	}
	assert.Equal(t, http.StatusServiceUnavailable, probe("/readyz"), "caches not synced")
	synced = true
	assert.Equal(t, http.StatusServiceUnavailable, probe("/readyz"), "no leader known")
	assert.Equal(t, http.StatusOK, probe("/healthz"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		elector.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	require.Eventually(t, func() bool { return elector.GetLeader() == "other" }, 5*time.Second, time.Millisecond)
	assert.Equal(t, http.StatusOK, probe("/readyz"), "another replica leads")
	clk.Step(time.Hour)
	assert.Equal(t, http.StatusOK, probe("/healthz"), "a standby is not held to the lease")
}
