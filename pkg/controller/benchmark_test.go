package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/gather"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
)

// benchmarkNHCs is how many NodeHealthChecks the handler benchmarks route
// among.
const benchmarkNHCs = 10

// nodeUpdates are updates a node gets, from the most frequent: a heartbeat
// (as cached, only the resourceVersion differs), a label no selector uses,
// and a condition that changes.
var nodeUpdates = []struct {
	name   string
	change func(*corev1.Node)
}{
	{"heartbeat", func(*corev1.Node) {}},
	{"other-label", func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "zone-b" }},
	{"condition", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }},
}

// cachedUpdate is a realistic node of role-3 and its update, both as the
// informer caches them, their labels shared through its table.
func cachedUpdate(change func(*corev1.Node)) (old, updated *nodeview.Node) {
	node := realisticNode(1)
	node.Labels["role"] = "role-3"
	next := node.DeepCopy()
	next.ResourceVersion = "2"
	change(next)
	table := nodeview.NewLabelTable()
	return nodeview.Of(node, table), nodeview.Of(next, table)
}

// BenchmarkNodeChanged is the filter that drops the updates that cannot
// change a decision.
func BenchmarkNodeChanged(b *testing.B) {
	keys := map[string]bool{"role": true}
	for _, u := range nodeUpdates {
		b.Run(u.name, func(b *testing.B) {
			old, updated := cachedUpdate(u.change)
			b.ReportAllocs()
			for b.Loop() {
				nodeview.Matters(old, updated, func() map[string]bool { return keys })
			}
		})
	}
}

// BenchmarkUpdateNode is the node update handler with 10 NodeHealthChecks:
// the filter, and the routing of a change to the one that selects the node.
func BenchmarkUpdateNode(b *testing.B) {
	c := controllerWithNHCs(b)
	for _, u := range nodeUpdates {
		b.Run(u.name, func(b *testing.B) {
			old, updated := cachedUpdate(u.change)
			b.ReportAllocs()
			for b.Loop() {
				c.handlers.updateNode(klog.Background(), old, updated)
			}
		})
	}
}

// BenchmarkEnqueueSelecting is the routing of a node to the
// NodeHealthChecks that select it, among 10.
func BenchmarkEnqueueSelecting(b *testing.B) {
	c := controllerWithNHCs(b)
	labels := nodeview.LabelsOf("worker-1", map[string]string{"role": "role-3", "kubernetes.io/hostname": "worker-1", v1alpha1.ControlPlaneRoleLabel: ""}, nil)
	b.ReportAllocs()
	for b.Loop() {
		c.handlers.enqueueSelecting(labels)
	}
}

func controllerWithNHCs(b *testing.B) *Controller {
	nhcs := make([]*v1alpha1.NodeHealthCheck, benchmarkNHCs)
	for i := range nhcs {
		nhcs[i] = selectingNHC(fmt.Sprintf("nhc-%d", i), fmt.Sprintf("role-%d", i))
	}
	return newTestController(b, nhcs...)
}

// BenchmarkSync is one whole sync of a NodeHealthCheck of n nodes, in a
// cluster of 10 such NodeHealthChecks with disjoint selectors, as make scale
// runs them: realistic nodes as the cache keeps them, one of them unhealthy
// under remediation, as in the trickle phase, and a status that needs no
// write.
// Each iteration syncs the next NodeHealthCheck, so that the caches hold the
// whole cluster, as in the controller. A condition change costs one sync
// or a few, so the ratio of the two is what the nodes add to it.
// A history of finished records is what a NodeHealthCheck keeps after
// incidents (at most about 50): what a sync pays for it, beyond the pool's
// nodes, is the difference of the two.
func BenchmarkSync(b *testing.B) {
	for _, c := range []struct{ nodes, history int }{{100, 0}, {1000, 0}, {1000, 50}} {
		n := c.nodes
		b.Run(fmt.Sprintf("nodes=%d/history=%d", n, c.history), func(b *testing.B) {
			f := newSyncFixture(b, nil)
			pools := poolRemediations{}
			f.c.observer, f.c.api.writer = pools, pools
			nhcs := make([]string, benchmarkNHCs)
			for i := range nhcs {
				nhc := workersNHC()
				nhc.Name, nhc.UID = fmt.Sprintf("nhc-%d", i), types.UID(fmt.Sprintf("uid-nhc-%d", i))
				nhc.Spec.Selector.MatchLabels = map[string]string{"role": fmt.Sprintf("role-%d", i)}
				nhc.Status.RemediationHistory = finishedHistory(i*n+1, c.history)
				f.setNHC(b, nhc)
				nhcs[i] = nhc.Name
				seen := gather.Seen{Ready: true, Remediations: map[string][]health.Remediation{}}
				for j := range n {
					node := realisticNode(i*n + j)
					node.Labels["role"] = nhc.Spec.Selector.MatchLabels["role"]
					if j == 0 {
						node.Status.Conditions[0].Status = corev1.ConditionFalse
						node.Status.Conditions[0].LastTransitionTime = metav1.NewTime(longAgo)
						seen.Remediations[node.Name] = []health.Remediation{{
							Ref: createdRef(health.Creation{Node: node.Name, Template: snrTemplate}), TemplateName: snrTemplate.Name, Created: longAgo}}
					}
					f.setNode(b, node)
				}
				pools[nhc.Name] = seen
			}
			ctx := context.Background()
			for _, name := range nhcs {
				// The first sync writes the status; the next ones find it unchanged.
				_, _ = f.c.Sync(ctx, name)
			}
			written := len(f.statuses.written)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := f.c.Sync(ctx, nhcs[i%len(nhcs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if len(f.statuses.written) != written {
				b.Fatalf("%d status writes in steady state", len(f.statuses.written)-written)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// finishedHistory is a history of records, each of one recovered
// incident of a node from first on, a step each.
func finishedHistory(first, records int) []v1alpha1.RemediationRecord {
	var history []v1alpha1.RemediationRecord
	for i := range records {
		started := metav1.NewTime(longAgo.Add(time.Duration(i) * time.Minute))
		finished := metav1.NewTime(started.Add(3 * time.Minute))
		node := realisticNode(first + i).Name
		history = append(history, v1alpha1.RemediationRecord{
			TargetKind: v1alpha1.TargetKindNode, TargetName: node, ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse,
			Detected: started, Started: started, Finished: &finished, Outcome: v1alpha1.OutcomeRecovered,
			Steps: []v1alpha1.RemediationRecordStep{{Kind: strings.TrimSuffix(snrTemplate.Kind, "Template"), Name: node, TemplateName: snrTemplate.Name, Started: started}},
		})
	}
	return history
}

// poolRemediations observes each NodeHealthCheck's own resources, and
// writes nothing: a steady state plans nothing.
type poolRemediations map[string]gather.Seen

func (p poolRemediations) WatchAll(context.Context, func() ([]*v1alpha1.NodeHealthCheck, error)) error {
	return nil
}

func (p poolRemediations) AddChangeHandler(remediation.ResourceChangeFunc) {}
func (p poolRemediations) AddSlotFreedHandler(func())                      {}
func (p poolRemediations) AddKindChangeHandler(remediation.KindChangeFunc) {}

func (p poolRemediations) Watch(context.Context, *v1alpha1.NodeHealthCheck, []*v1alpha1.NodeHealthCheck) (*remediation.Watched, error) {
	return &remediation.Watched{}, nil
}

func (p poolRemediations) Read(nhc *v1alpha1.NodeHealthCheck, _ *remediation.Watched) (gather.Seen, error) {
	return p[nhc.Name], nil
}

func (p poolRemediations) Forget(string) {}

func (p poolRemediations) WatchLeft(string) (remediation.Left, error) {
	return remediation.Left{Known: true}, nil
}

func (p poolRemediations) LookUpLapsed(context.Context) {}

func (p poolRemediations) Create(context.Context, *v1alpha1.NodeHealthCheck, health.Creation, *remediation.Watched) (health.Created, error) {
	return health.Created{}, errors.New("a steady state creates nothing")
}

func (p poolRemediations) Delete(context.Context, string, *remediation.Watched, health.Deletion) (bool, error) {
	return false, errors.New("a steady state deletes nothing")
}

func (p poolRemediations) Annotate(context.Context, *remediation.Watched, corev1.ObjectReference, string, *string) error {
	return errors.New("a steady state annotates nothing")
}

func (p poolRemediations) RemoveNodeAnnotation(context.Context, string, string) error {
	return errors.New("a steady state annotates nothing")
}
