package health

import (
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// now is the fixed time every test evaluates at.
var now = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)

const conditionDuration = 300 * time.Second

type nodeOption func(*nodeview.Node)

// testNode returns a node that has been Ready for an hour.
func testNode(name string, opts ...nodeOption) *nodeview.Node {
	n := &nodeview.Node{
		Meta:       nodeview.Meta{Name: name, Annotations: map[string]string{}},
		Conditions: []nodeview.Condition{nodeview.NewCondition(corev1.NodeReady, corev1.ConditionTrue, now.Add(-time.Hour))},
	}
	for _, opt := range opts {
		opt(n)
	}
	return n
}

// condition sets a node condition that changed to status `ago` before now.
func condition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) nodeOption {
	return func(n *nodeview.Node) {
		c := nodeview.NewCondition(conditionType, status, now.Add(-ago))
		for i := range n.Conditions {
			if n.Conditions[i].Type() == conditionType {
				n.Conditions[i] = c
				return
			}
		}
		n.Conditions = append(n.Conditions, c)
	}
}

// notReady makes a node Ready=False since `ago`.
func notReady(ago time.Duration) nodeOption {
	return condition(corev1.NodeReady, corev1.ConditionFalse, ago)
}

// unhealthy makes a node Ready=False for longer than the default duration.
var unhealthy = notReady(time.Hour)

// labelMaps holds, by node, the map its labels were last built from: a
// Node keeps its labels as an immutable list.
var labelMaps sync.Map

// label sets a label.
func label(key, value string) nodeOption {
	return func(n *nodeview.Node) {
		m, _ := labelMaps.LoadOrStore(n, map[string]string{})
		labels := maps.Clone(m.(map[string]string))
		labels[key] = value
		labelMaps.Store(n, labels)
		n.Labels = nodeview.LabelsOf(n.Name, labels, nil)
	}
}

var controlPlane = label(v1alpha1.ControlPlaneRoleLabel, "")

func annotate(key, value string) nodeOption {
	return func(n *nodeview.Node) { n.Annotations[key] = value }
}

var confirmedHealthy = annotate(v1alpha1.ManuallyConfirmedHealthyAnnotation, "true")

// nodes returns count nodes named prefix-0, prefix-1, ...
func nodes(prefix string, count int, opts ...nodeOption) []*nodeview.Node {
	list := make([]*nodeview.Node, count)
	for i := range list {
		list[i] = testNode(fmt.Sprintf("%s-%d", prefix, i), opts...)
	}
	return list
}

type nhcOption func(*v1alpha1.NodeHealthCheck)

var snrTemplate = corev1.ObjectReference{
	APIVersion: "self-node-remediation.medik8s.io/v1alpha1", Kind: "SelfNodeRemediationTemplate",
	Namespace: "snr", Name: "automatic",
}

// testNHC returns an NHC with the SNR template, minHealthy 51% and the
// default conditions.
func testNHC(opts ...nhcOption) *v1alpha1.NodeHealthCheck {
	template := snrTemplate
	nhc := &v1alpha1.NodeHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "test", UID: "nhc-uid", Generation: 3},
		Spec: v1alpha1.NodeHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
			RemediationTemplate: &template,
			MinHealthy:          ptr.To(intstr.FromString("51%")),
			UnhealthyConditions: []v1alpha1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Duration: metav1.Duration{Duration: conditionDuration}},
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Duration: metav1.Duration{Duration: conditionDuration}},
			},
		},
	}
	for _, opt := range opts {
		opt(nhc)
	}
	return nhc
}

func unhealthyCondition(conditionType corev1.NodeConditionType, status corev1.ConditionStatus, duration time.Duration) v1alpha1.UnhealthyCondition {
	return v1alpha1.UnhealthyCondition{Type: conditionType, Status: status, Duration: metav1.Duration{Duration: duration}}
}

func minHealthy(v intstr.IntOrString) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Spec.MinHealthy, n.Spec.MaxUnhealthy = &v, nil }
}

func maxUnhealthy(v intstr.IntOrString) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Spec.MinHealthy, n.Spec.MaxUnhealthy = nil, &v }
}

func paused(n *v1alpha1.NodeHealthCheck) { n.Spec.PauseRequests = []string{"upgrade by @admin"} }

func healthyDelay(d time.Duration) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Spec.HealthyDelay = &metav1.Duration{Duration: d} }
}

func stormThreshold(t int32) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Spec.StormRecoveryThreshold = &t }
}

func stormCooldown(d time.Duration) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Spec.StormCooldownDuration = &metav1.Duration{Duration: d} }
}

// template returns a template reference of a kind in the test group.
func template(kind, name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "test.medik8s.io/v1alpha1", Kind: kind, Namespace: "ns", Name: name}
}

// escalating replaces the template with escalation steps.
func escalating(steps ...v1alpha1.EscalatingRemediation) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) {
		n.Spec.RemediationTemplate = nil
		n.Spec.EscalatingRemediations = steps
	}
}

func escalationStep(t corev1.ObjectReference, order int, timeout time.Duration) v1alpha1.EscalatingRemediation {
	return v1alpha1.EscalatingRemediation{RemediationTemplate: t, Order: order, Timeout: metav1.Duration{Duration: timeout}}
}

// withStatus sets the NHC's previous status.
func withStatus(status v1alpha1.NodeHealthCheckStatus) nhcOption {
	return func(n *v1alpha1.NodeHealthCheck) { n.Status = status }
}

type remediationOption func(*Remediation)

// remediationOf returns a resource created from a template for a node,
// `age` before now.
func remediationOf(t corev1.ObjectReference, node string, age time.Duration, opts ...remediationOption) Remediation {
	r := Remediation{
		Ref: corev1.ObjectReference{
			APIVersion: t.APIVersion, Kind: RemediationKind(t.Kind), Namespace: t.Namespace, Name: node,
			UID: types.UID(fmt.Sprintf("%s-%s-uid", node, t.Name)),
		},
		TemplateName: t.Name,
		Created:      now.Add(-age),
	}
	for _, opt := range opts {
		opt(&r)
	}
	return r
}

func snrRemediation(node string, age time.Duration, opts ...remediationOption) Remediation {
	return remediationOf(snrTemplate, node, age, opts...)
}

func succeeded(status metav1.ConditionStatus) remediationOption {
	return func(r *Remediation) { r.Succeeded = status }
}

func deleting(r *Remediation) { r.Deleting = true }

func permanentNodeDeletion(r *Remediation) { r.PermanentNodeDeletionExpected = true }

func timedOutAnnotation(at time.Time) remediationOption {
	return func(r *Remediation) { r.TimedOut = at }
}

func healthyDelayAnnotation(at time.Time) remediationOption {
	return func(r *Remediation) { r.HealthyDelayStart = at }
}

func controlPlaneLabel(r *Remediation) { r.ControlPlane = true }

func generatedName(name string) remediationOption {
	return func(r *Remediation) { r.Ref.Name = name; r.Ref.UID = types.UID(name + "-uid") }
}

// remediations groups resources by node: the helpers name each resource
// after its node.
func remediations(resources ...Remediation) map[string][]Remediation {
	m := map[string][]Remediation{}
	for _, r := range resources {
		m[r.Ref.Name] = append(m[r.Ref.Name], r)
	}
	return m
}

// remediationsFor groups resources under one node.
func remediationsFor(node string, resources ...Remediation) map[string][]Remediation {
	return map[string][]Remediation{node: resources}
}

// createdNodes lists the nodes of a decision's creations.
func createdNodes(d result) []string {
	var names []string
	for _, c := range d.Create {
		names = append(names, c.Node)
	}
	return names
}

func deletedNames(d result) []string {
	var names []string
	for _, del := range d.Delete {
		names = append(names, del.Resource.Name)
	}
	return names
}

func verdictOf(d result, node string) NodeVerdict {
	for _, v := range d.Nodes {
		if v.Node.Name == node {
			return v
		}
	}
	panic("no verdict for node " + node)
}

func entryOf(d result, node string) *v1alpha1.UnhealthyNode {
	for _, e := range d.Status.UnhealthyNodes {
		if e.Name == node {
			return e
		}
	}
	return nil
}

func eventReasons(events []Event) []string {
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

func evaluate(nhc *v1alpha1.NodeHealthCheck, nodeList []*nodeview.Node, resources map[string][]Remediation) result {
	return decide(Input{NHC: nhc, Nodes: nodeList, Remediations: resources, Now: now})
}

// result is a plan with the status built as the controller builds it after
// carrying the plan out: every time-out and deletion succeeded, and nothing
// is created until a test says so with created.
type result struct {
	Plan
	in     Input
	out    Outcome
	Status v1alpha1.NodeHealthCheckStatus
}

func decide(in Input) result {
	r := result{Plan: Evaluate(in), in: in}
	r.out = Outcome{TimedOut: r.TimeOut, Deleted: r.Delete}
	r.Status = Status(in, &r.Plan, &r.out)
	return r
}

// created records that a creation succeeded, and builds the status again.
func (r *result) created(c Creation, ref corev1.ObjectReference, at time.Time) {
	r.out.Created = append(r.out.Created, Created{Creation: c, Resource: ref, CreationTime: at})
	r.Status = Status(r.in, &r.Plan, &r.out)
}

// minHealthyOf parses a spec's budget and resolves it for observed nodes.
func minHealthyOf(spec *v1alpha1.NodeHealthCheckSpec, observed int) (int, error) {
	rule, err := parseBudget(spec)
	if err != nil {
		return 0, err
	}
	return rule.minHealthy(observed), nil
}
