package serving

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each probe fails with its own status and says why; it passes with "ok".
func TestProbesAnswerWithTheirChecks(t *testing.T) {
	var unhealthy, unready error
	handler := ProbesHandler(func() error { return unhealthy }, func() error { return unready })
	probe := func(path string) (int, string) {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := probe(path)
		assert.Equal(t, http.StatusOK, code, path)
		assert.Equal(t, "ok", body, path)
	}
	unhealthy, unready = errors.New("lease not renewed"), errors.New("caches have not synced")
	code, body := probe("/healthz")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "lease not renewed\n", body)
	code, body = probe("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "caches have not synced\n", body)
	code, _ = probe("/livez")
	assert.Equal(t, http.StatusNotFound, code)
}
