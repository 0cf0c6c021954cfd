package nodeview

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

var t0 = metav1.NewTime(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))

func baseNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "1", Labels: map[string]string{"role": "worker", "zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0, LastHeartbeatTime: t0},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: t0, LastHeartbeatTime: t0},
		}},
	}
}

func TestOfKeepsWhatTheControllerReads(t *testing.T) {
	now := time.Now()
	t0 := metav1.NewTime(now.Add(-time.Hour))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: "4711", CreationTimestamp: t0,
			Labels:        map[string]string{"role": "worker", "topology.kubernetes.io/zone": "a"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: t0, LastHeartbeatTime: metav1.NewTime(now),
				Reason: "KubeletReady", Message: "kubelet is posting ready status",
			}},
			Images: []corev1.ContainerImage{{Names: []string{"registry.example.com/app:v1"}, SizeBytes: 123456789}},
		},
	}
	assert.Equal(t, &Node{
		Meta: Meta{
			Name: "worker-1", UID: "8d0b6a52-1", ResourceVersion: "4711", CreationTimestamp: t0,
		},
		Labels:     LabelsOf("worker-1", map[string]string{"role": "worker", "topology.kubernetes.io/zone": "a"}, nil),
		Conditions: []Condition{NewCondition(corev1.NodeReady, corev1.ConditionTrue, t0.Time)},
	}, Of(node, nil), "no annotation a decision reads, no heartbeat: a heartbeat changes nothing kept")

	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t0}
	second := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "second", Effect: corev1.TaintEffectNoSchedule}
	node.Spec.Taints = append(node.Spec.Taints, outOfService, second)
	assert.Equal(t, &outOfService, Of(node, nil).OutOfService, "the history records the fencing")

	node.DeletionTimestamp = &t0
	node.Annotations[v1alpha1.ManuallyConfirmedHealthyAnnotation] = ""
	kept := Of(node, nil)
	assert.Equal(t, &t0, kept.DeletionTimestamp)
	assert.Equal(t, map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}, kept.Annotations, "the manual confirmation is kept")

	bookmark := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true", "other": "x"}}}
	assert.Equal(t, map[string]string{metav1.InitialEventsAnnotationKey: "true"}, Of(bookmark, nil).Annotations, "the informer reads a bookmark's")

	table := NewLabelTable()
	assert.Same(t, Of(node, table).Labels.list, Of(node, table).Labels.list, "a table shares the labels")
}

func TestMatters(t *testing.T) {
	selectorKeys := map[string]bool{"role": true}
	cases := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"a heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"conditions in another order", func(n *corev1.Node) {
			n.Status.Conditions[0], n.Status.Conditions[1] = n.Status.Conditions[1], n.Status.Conditions[0]
		}, false},
		{"a status", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"a transition time alone", func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = metav1.Now() }, true},
		{"a condition added", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionTrue})
		}, true},
		{"a condition removed", func(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] }, true},
		{"a condition type replaced", func(n *corev1.Node) { n.Status.Conditions[1].Type = corev1.NodeDiskPressure }, true},
		{"a selector label changed", func(n *corev1.Node) { n.Labels["role"] = "infra" }, true},
		{"a selector label removed", func(n *corev1.Node) { delete(n.Labels, "role") }, true},
		{"another label changed", func(n *corev1.Node) { n.Labels["zone"] = "b" }, false},
		{"the exclude label added", func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "true" }, true},
		{"the exclude label added empty", func(n *corev1.Node) { n.Labels[v1alpha1.ExcludeFromRemediationLabel] = "" }, true},
		{"a control-plane role added", func(n *corev1.Node) { n.Labels[v1alpha1.ControlPlaneRoleLabel] = "" }, true},
		{"the confirmation annotation added", func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.ManuallyConfirmedHealthyAnnotation: ""}
		}, true},
		{"another annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"note": "x"} }, false},
		{"the out-of-service taint added", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
		}, true},
		{"another taint added", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
		}, false},
	}
	table := NewLabelTable()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := baseNode()
			updated := old.DeepCopy()
			tc.change(updated)
			looked := false
			keys := func() map[string]bool { looked = true; return selectorKeys }
			assert.Equal(t, tc.want, Matters(Of(old, table), Of(updated, table), keys))
			if tc.name == "a heartbeat" {
				assert.False(t, looked, "a heartbeat costs no selector lookup")
			}
		})
	}
}

// TestEveryKeptFieldIsCompared changes, one at a time, every field that Of
// keeps of a node that has them all. Unchanged must see each change but
// the resourceVersion's, or the node cache would take it for a heartbeat
// and never store it; Matters must see each but those no decision reads,
// listed here, or a decision that reads it would not be woken.
func TestEveryKeptFieldIsCompared(t *testing.T) {
	unread := map[string]string{
		"Name":                      "the cache's key: another name is another node",
		"UID":                       "another UID is a node created again: a delete and an add",
		"ResourceVersion":           "every update has another",
		"CreationTimestamp":         "set once, with the UID",
		"DeletionTimestamp":         "no decision reads it: a node is remediated until it is gone",
		"DeletionTimestamp removed": "no decision reads it",
		"Annotations[" + metav1.InitialEventsAnnotationKey + "]":           "only a watch's bookmark has it, which is no node",
		"Annotations[" + metav1.InitialEventsAnnotationKey + "] removed":   "only a watch's bookmark has it",
		"Annotations[" + v1alpha1.ManuallyConfirmedHealthyAnnotation + "]": "a decision reads whether it is there",
		"OutOfService.Key":               "a decision reads whether the taint is there",
		"OutOfService.Value":             "a decision reads whether the taint is there",
		"OutOfService.Effect":            "a decision reads whether the taint is there",
		"OutOfService.TimeAdded":         "the history reads it once, when the taint appears",
		"OutOfService.TimeAdded removed": "the history reads it once, when the taint appears",
		"Conditions in another order":    "a decision reads the conditions in any order",
	}
	kept := Of(fullNode(), nil)
	assertEveryFieldKept(t, kept)
	every := func() map[string]bool {
		keys := map[string]bool{addedLabel: true}
		for _, p := range kept.Labels.list.pairs {
			keys[p.key] = true
		}
		return keys
	}
	changes := changesOf(kept)
	for path, change := range changes {
		changed := kept.DeepCopy()
		change(changed)
		if path == "ResourceVersion" {
			assert.True(t, Unchanged(kept, changed), "the resourceVersion alone is a heartbeat")
		} else {
			assert.False(t, Unchanged(kept, changed), "a Node keeps %s: make Unchanged compare it", path)
		}
		if reason, isUnread := unread[path]; isUnread {
			assert.False(t, Matters(kept, changed, every), "Matters compares %s, which this test says no decision reads (%s)", path, reason)
		} else {
			assert.True(t, Matters(kept, changed, every), "a Node keeps %s: make Matters compare it, or say here why no decision reads it", path)
		}
	}
	for path := range unread {
		assert.Contains(t, changes, path, "no such change")
	}
	t.Logf("%d changes", len(changes))
}

// assertEveryFieldKept fails when a field of Node is empty after Of kept a
// node with every field set: the changes would not reach it.
func assertEveryFieldKept(t *testing.T, kept *Node) {
	t.Helper()
	for name, field := range fieldsOf(kept) {
		assert.False(t, field.IsZero(), "Of keeps no %s of a node that has every field", name)
	}
}
