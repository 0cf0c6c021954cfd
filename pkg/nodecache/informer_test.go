package nodecache

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// The confirmation reads of a storm go out many at once: over HTTP/1.1
// each one dialed a TLS connection of its own.
func TestNodeReadsShareOneHTTP2Connection(t *testing.T) {
	var mu sync.Mutex
	protocols, connections := map[string]int{}, map[string]bool{}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protocols[r.Proto]++
		connections[r.RemoteAddr] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	server.EnableHTTP2 = true
	// Connections dialed while the first is set up are closed unused.
	server.Config.ErrorLog = log.New(io.Discard, "", 0)
	server.StartTLS()
	defer server.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})

	informer, err := NewInformer(&rest.Config{Host: server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: 1000, Burst: 1000}, 0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, _, err := informer.Node(context.Background(), "worker-1", "")
			assert.Error(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, map[string]int{"HTTP/2.0": 20}, protocols)
	assert.Len(t, connections, 1, "one connection for all")
}
