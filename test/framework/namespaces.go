package framework

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FinalizeDeletedNamespaces stands in, until the test ends, for the
// namespace controller that this control plane lacks: once one of the named
// namespaces is being deleted, it removes the namespace's finalizer, so
// that the deletion ends (and a `kubectl delete` that waits for it
// returns) as in a cluster, where that controller empties and then
// finalizes the namespace.
func (e *Env) FinalizeDeletedNamespaces(t *testing.T, names ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, name := range names {
				ns, err := e.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
				if err != nil || ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					continue
				}
				ns.Spec.Finalizers = nil
				_, _ = e.Kube.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
			}
		}
	}()
}
