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
