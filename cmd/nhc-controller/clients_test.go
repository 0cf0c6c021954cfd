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
	_, _ = clients.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	_, _ = clients.events.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	_, _ = clients.nhc.RemediationV1alpha1().NodeHealthChecks().List(ctx, metav1.ListOptions{})

	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, accept["/api/v1/nodes"], runtime.ContentTypeProtobuf, "nodes")
	assert.Contains(t, accept["/apis/events.k8s.io/v1/namespaces/default/events"], runtime.ContentTypeProtobuf, "events")
	assert.NotContains(t, accept["/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks"], runtime.ContentTypeProtobuf, "NodeHealthChecks are custom resources")
}

// Leader election and the reviews of metrics callers each have a rate
// limiter of their own: no flood of scrapes, events or remediations delays
// a lease renewal.
func TestLeaderElectionSharesNoRateLimit(t *testing.T) {
	clients, err := newClients(&rest.Config{Host: "https://example.invalid"}, defaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	limiters := map[string]any{
		"kube":     clients.kube.CoordinationV1().RESTClient().GetRateLimiter(),
		"events":   clients.events.CoreV1().RESTClient().GetRateLimiter(),
		"election": clients.election.CoordinationV1().RESTClient().GetRateLimiter(),
		"reviews":  clients.reviews.AuthenticationV1().RESTClient().GetRateLimiter(),
	}
	for a, la := range limiters {
		for b, lb := range limiters {
			if a < b {
				assert.NotSame(t, la, lb, "%s and %s", a, b)
			}
		}
	}
}
