package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nodehealthcheck/nhc-controller/pkg/election"
)

// A replica is ready once its caches synced and, with leader election, it
// knows who leads (pkg/election tests that part).
func TestReadyOnceTheCachesSynced(t *testing.T) {
	synced := false
	handler := probes(func() bool { return synced }, election.Alone(context.Background()))
	probe := func(path string) int {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code
	}
	assert.Equal(t, http.StatusServiceUnavailable, probe("/readyz"), "caches not synced")
	assert.Equal(t, http.StatusOK, probe("/healthz"))
	synced = true
	assert.Equal(t, http.StatusOK, probe("/readyz"))
}
