package kubeclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write whose context ends asks the API server to give up at the same
// moment; reads, and writes without a deadline, are sent as they are.
func TestWritesCarryTheirDeadlineToTheAPIServer(t *testing.T) {
	var got []string
	server := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Query().Get("timeout"))
	}))
	defer server.Close()
	client := &http.Client{Transport: ServerTimeouts(http.DefaultTransport)}
	send := func(ctx context.Context, method string) error {
		req, err := http.NewRequestWithContext(ctx, method, server.URL+"/apis/test/v1/things", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, send(ctx, http.MethodPost))
	require.NoError(t, send(ctx, http.MethodGet))
	require.NoError(t, send(context.Background(), http.MethodDelete))
	require.Len(t, got, 3)
	timeout, err := time.ParseDuration(got[0][len("POST "):])
	require.NoError(t, err)
	assert.Greater(t, timeout, 4*time.Second)
	assert.LessOrEqual(t, timeout, 5*time.Second)
	assert.Equal(t, []string{"GET ", "DELETE "}, got[1:])

	ended, cancelEnded := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelEnded()
	assert.Error(t, send(ended, http.MethodPost), "a write past its deadline is not sent")
	assert.Len(t, got, 3)
}
