package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// kubeletLeaseNamespace holds the kubelets' node leases; the API server
// creates it.
const kubeletLeaseNamespace = corev1.NamespaceNodeLease

// kubelets send what kubelets send while nothing changes: node status
// heartbeats and node lease renewals, each round-robin over the nodes at
// its rate, until halted. The controller watches the heartbeats; the lease
// renewals load the API server and etcd, as in a cluster.
type kubelets struct {
	heartbeats, renewals, failed atomic.Int64
	stop                         context.CancelFunc
	done                         sync.WaitGroup
}

// startKubelets starts the heartbeats and lease renewals.
func (b *bench) startKubelets(ctx context.Context) *kubelets {
	sending, stop := context.WithCancel(ctx)
	k := &kubelets{stop: stop}
	heartbeat := func(node string) error { return heartbeat(ctx, b.kube, node, b.conditionTypes) }
	k.done.Go(func() { k.send(sending, b.cfg, b.cfg.HeartbeatRate, heartbeat, &k.heartbeats) })
	if b.cfg.LeaseRate > 0 {
		renew := func(node string) error { return renewLease(ctx, b.kube, node) }
		k.done.Go(func() { k.send(sending, b.cfg, b.cfg.LeaseRate, renew, &k.renewals) })
	}
	return k
}

// halt stops sending and waits for the writes in flight.
func (k *kubelets) halt() {
	k.stop()
	k.done.Wait()
	if n := k.failed.Swap(0); n > 0 {
		log.Printf("warning: %d heartbeats or lease renewals failed", n)
	}
}

// send writes to node after node, rate a second, with the bench's writers,
// counting each write that succeeded in sent.
func (k *kubelets) send(ctx context.Context, cfg *config, rate float64, write func(node string) error, sent *atomic.Int64) {
	work := make(chan string)
	var writers sync.WaitGroup
	for range cfg.Writers {
		writers.Go(func() {
			for node := range work {
				if err := write(node); err == nil {
					sent.Add(1)
				} else if ctx.Err() == nil {
					k.failed.Add(1)
				}
			}
		})
	}
	started := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for i := 0; sleepUntil(ctx, started.Add(time.Duration(i)*interval)); i++ {
		select {
		case work <- nodeName(i % cfg.Nodes):
		case <-ctx.Done():
		}
	}
	close(work)
	writers.Wait()
}

// createKubeletLeases creates every node's lease, as each kubelet does when
// it starts.
func createKubeletLeases(ctx context.Context, c *config, client kubernetes.Interface) error {
	nodes := make([]string, c.Nodes)
	for i := range nodes {
		nodes[i] = nodeName(i)
	}
	return forEach(ctx, c.Writers, nodes, func(node string) error {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: kubeletLeaseNamespace},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()},
			},
		}
		return retryWrite(ctx, func() error {
			_, err := client.CoordinationV1().Leases(kubeletLeaseNamespace).Create(ctx, lease, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	})
}

// renewLease moves a node lease's renew time to now, as its kubelet does
// every 10 s.
func renewLease(ctx context.Context, client kubernetes.Interface, node string) error {
	patch := fmt.Appendf(nil, `{"spec":{"renewTime":%q}}`, metav1.NowMicro().Format(metav1.RFC3339Micro))
	return retryWrite(ctx, func() error {
		_, err := client.CoordinationV1().Leases(kubeletLeaseNamespace).Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
