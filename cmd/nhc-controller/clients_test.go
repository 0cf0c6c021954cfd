package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestClientsAcceptProtobufForBuiltinKinds proves what the node informer
// asks for: protobuf for built-in kinds, JSON for NodeHealthChecks.
func TestClientsAcceptProtobufForBuiltinKinds(t *testing.T) {
	var mu sync.Mutex
	accept := map[string]string{}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accept[r.URL.Path] = r.Header.Get("Accept")
		mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	defer server.Close()

	clients, err := newClients(&rest.Config{Host: server.URL}, defaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = clients.kube.Nodes().List(ctx, metav1.ListOptions{})
	_, _ = clients.events.Events("default").List(ctx, metav1.ListOptions{})
	_, _ = clients.nhc.NodeHealthChecks().List(ctx, metav1.ListOptions{})

	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, accept["/api/v1/nodes"], runtime.ContentTypeProtobuf, "nodes")
	assert.Contains(t, accept["/api/v1/namespaces/default/events"], runtime.ContentTypeProtobuf, "events")
	assert.NotContains(t, accept["/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks"], runtime.ContentTypeProtobuf, "NodeHealthChecks are custom resources")
}

// Events have a rate limiter of their own: no flood of events delays a
// remediation. (The election's lease client and the reviews of metrics
// callers have theirs too; their packages test them.)
func TestEventsShareNoRateLimit(t *testing.T) {
	clients, err := newClients(&rest.Config{Host: "https://example.invalid"}, defaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	limiters := map[string]any{
		"kube":      clients.kube.Leases("").GetClient().GetRateLimiter(),
		"kube core": clients.kube.Nodes().GetClient().GetRateLimiter(),
		"events":    clients.events.Events("").GetClient().GetRateLimiter(),
		"nhc":       clients.nhc.RESTClient().GetRateLimiter(),
	}
	assert.Same(t, limiters["kube"], limiters["kube core"], "one limiter for every group, as a clientset's")
	for a, la := range limiters {
		for b, lb := range limiters {
			if a < b && !(a == "kube" && b == "kube core") {
				assert.NotSame(t, la, lb, "%s and %s", a, b)
			}
		}
	}
}
