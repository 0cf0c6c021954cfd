package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/generated/informers/externalversions"
)

// watchObserved watches the NodeHealthChecks from now on; the function it
// returns waits until each one's status.observedNodes is the number wanted,
// and returns when the last one got there.
func watchObserved(ctx context.Context, client versioned.Interface, want map[string]int) (func(time.Duration) (time.Time, error), error) {
	ctx, stop := context.WithCancel(ctx)
	factory := externalversions.NewSharedInformerFactory(client, 0)
	informer := factory.Remediation().V1alpha1().NodeHealthChecks().Informer()
	var mu sync.Mutex
	observed := map[string]bool{}
	done := make(chan time.Time, 1)
	check := func(obj any) {
		nhc, ok := obj.(*v1alpha1.NodeHealthCheck)
		if !ok || nhc.Status.ObservedNodes == nil || int(*nhc.Status.ObservedNodes) != want[nhc.Name] {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		observed[nhc.Name] = true
		if len(observed) == len(want) {
			select {
			case done <- time.Now():
			default:
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}); err != nil {
		stop()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		stop()
		return nil, fmt.Errorf("the NodeHealthChecks' watch did not sync")
	}
	return func(timeout time.Duration) (time.Time, error) {
		defer stop()
		select {
		case t := <-done:
			return t, nil
		case <-time.After(timeout):
			return time.Time{}, fmt.Errorf("the NodeHealthChecks did not observe their nodes within %v", timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}, nil
}
