package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// groupLabel puts each node in one NodeHealthCheck's selection.
const groupLabel = "bench.nhc/group"

// nodeFixture is a worker node as a kubelet and node-problem-detector
// report it: about 11 KB as JSON once the API server adds managed fields.
//
//go:embed testdata/node.json
var nodeFixture []byte

// writeBackoff retries a node write the API server refused for load.
var writeBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 8}

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// group is the NodeHealthCheck that selects node i: contiguous blocks of
// nodes, sizes differing by one at most.
func group(c *config, i int) int { return i * c.NHCs / c.Nodes }

func groupName(g int) string { return fmt.Sprintf("bench-%02d", g) }

// groupSize is how many nodes group g holds.
func groupSize(c *config, g int) int {
	first := (g*c.Nodes + c.NHCs - 1) / c.NHCs
	next := ((g+1)*c.Nodes + c.NHCs - 1) / c.NHCs
	return next - first
}

// newNode is the fixture made node i: its own name, addresses, IDs and group.
func newNode(c *config, i int) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := json.Unmarshal(nodeFixture, node); err != nil {
		return nil, err
	}
	name := nodeName(i)
	ip := fmt.Sprintf("10.%d.%d.%d", 16+i>>16, i>>8&0xff, i&0xff)
	instance := fmt.Sprintf("i-%017x", 0x0123456789a0000+i)
	node.Name = name
	node.Labels["kubernetes.io/hostname"] = name
	node.Labels[groupLabel] = groupName(group(c, i))
	node.Annotations["alpha.kubernetes.io/provided-node-ip"] = ip
	node.Annotations["csi.volume.kubernetes.io/nodeid"] = `{"ebs.csi.aws.com":"` + instance + `"}`
	node.Spec.ProviderID = "aws:///us-east-1a/" + instance
	node.Spec.PodCIDR = fmt.Sprintf("%d.%d.%d.0/24", 100+i>>16, i>>8&0xff, i&0xff)
	node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ip},
		{Type: corev1.NodeInternalDNS, Address: "ip-" + ip + ".ec2.internal"},
		{Type: corev1.NodeHostName, Address: name},
	}
	node.Status.NodeInfo.MachineID = fmt.Sprintf("ec2%029x", i)
	node.Status.NodeInfo.SystemUUID = fmt.Sprintf("ec2%05x-0000-0000-0000-000000000000", i)
	return node, nil
}

// createNodes creates the nodes, status included as a kubelet registers
// them, with parallel writers.
func createNodes(ctx context.Context, c *config, client kubernetes.Interface) error {
	indices := make([]int, c.Nodes)
	for i := range indices {
		indices[i] = i
	}
	return forEach(ctx, c.Writers, indices, func(i int) error {
		node, err := newNode(c, i)
		if err != nil {
			return err
		}
		return retryWrite(ctx, func() error {
			_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	})
}

// forEach runs fn on every item with parallel workers and returns the
// first error.
func forEach[T any](ctx context.Context, workers int, items []T, fn func(T) error) error {
	work := make(chan T)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Go(func() {
			for item := range work {
				if err := fn(item); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for _, item := range items {
		if ctx.Err() != nil {
			break
		}
		work <- item
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// retryWrite retries a write that failed for load (429, 5xx, timeouts).
func retryWrite(ctx context.Context, write func() error) error {
	var err error
	backoff := writeBackoff
	for backoff.Steps > 0 {
		if err = write(); err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(backoff.Step())
	}
	return err
}

func retriable(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// written is what a node status write stored.
type written struct {
	node string
	// sent is when the write was sent.
	sent time.Time
	// transition is the stored lastTransitionTime of the Ready condition
	// (one-second precision).
	transition time.Time
	// version is the node's resourceVersion after the write: etcd's
	// revision, ordered with every other object's.
	version uint64
}

// setReady writes the Ready condition as a kubelet would, transitioned now.
func setReady(ctx context.Context, client kubernetes.Interface, node string, ready bool) (written, error) {
	status, reason, message := corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
	if !ready {
		status, reason, message = corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false"
	}
	now := metav1.Now()
	patch := statusPatch(map[string]any{
		"type": corev1.NodeReady, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": now, "lastHeartbeatTime": now,
	})
	w := written{node: node, sent: time.Now()}
	var updated *corev1.Node
	err := retryWrite(ctx, func() error {
		var err error
		updated, err = client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		return w, fmt.Errorf("setting %s Ready=%v: %w", node, ready, err)
	}
	for _, c := range updated.Status.Conditions {
		if c.Type == corev1.NodeReady {
			w.transition = c.LastTransitionTime.Time
		}
	}
	w.version, err = strconv.ParseUint(updated.ResourceVersion, 10, 64)
	return w, err
}

// heartbeat renews every condition's lastHeartbeatTime and changes nothing
// else, as a kubelet's periodic status report does.
func heartbeat(ctx context.Context, client kubernetes.Interface, node string, conditionTypes []corev1.NodeConditionType) error {
	now := metav1.Now()
	conditions := make([]map[string]any, len(conditionTypes))
	for i, t := range conditionTypes {
		conditions[i] = map[string]any{"type": t, "lastHeartbeatTime": now}
	}
	patch := statusPatch(conditions...)
	return retryWrite(ctx, func() error {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// statusPatch is a strategic merge patch of conditions, merged by type:
// the fields given change, the others stay.
func statusPatch(conditions ...map[string]any) []byte {
	data, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions}})
	return data
}
