package health

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// historyNHC is an NHC that remediates with one healthy node of three.
func historyNHC(status v1alpha1.NodeHealthCheckStatus, opts ...nhcOption) *v1alpha1.NodeHealthCheck {
	return testNHC(append([]nhcOption{minHealthy(intstr.FromInt32(1)), withStatus(status)}, opts...)...)
}

func at(t time.Time) *metav1.Time { return ptr.To(metav1.NewTime(t)) }

// createAll records every planned creation as done at now, with the
// resource the helpers would name.
func createAll(d *result) {
	for _, c := range d.Create {
		r := remediationOf(c.Template, c.Node, 0)
		d.created(c, r.Ref, now)
	}
}

func TestHistoryFollowsOneRemediationFromDetectionToRecovery(t *testing.T) {
	healthy := nodes("healthy", 2)
	// Ready=False for an hour: the condition's 300s passed 55 minutes ago.
	d := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{}), append(healthy, testNode("sick", unhealthy)), nil)
	assert.Empty(t, d.Status.RemediationHistory, "nothing is on record before a resource exists")
	createAll(&d)
	require.Len(t, d.Status.RemediationHistory, 1)
	want := v1alpha1.RemediationRecord{
		TargetKind: "Node", TargetName: "sick", ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse,
		Detected: metav1.NewTime(now.Add(-time.Hour + conditionDuration)), Started: metav1.NewTime(now),
		Outcome: v1alpha1.OutcomeRemediating,
		Steps:   []v1alpha1.RemediationRecordStep{{Kind: "SelfNodeRemediation", Name: "sick", TemplateName: "automatic", Started: metav1.NewTime(now)}},
	}
	assert.Equal(t, want, d.Status.RemediationHistory[0])

	// The same sync again, as after a restart: the same record, not a second.
	resources := remediations(snrRemediation("sick", 0))
	again := evaluate(historyNHC(d.Status), append(healthy, testNode("sick", unhealthy)), resources)
	assert.Equal(t, []v1alpha1.RemediationRecord{want}, again.Status.RemediationHistory)

	// The node is healthy: the resource is deleted, the record still open.
	recovering := evaluate(historyNHC(again.Status), append(healthy, testNode("sick")), resources)
	require.Len(t, recovering.Delete, 1)
	assert.Equal(t, v1alpha1.OutcomeRemediating, recovering.Status.RemediationHistory[0].Outcome)
	assert.Nil(t, recovering.Status.RemediationHistory[0].Finished)

	// The resource is gone: finished.
	done := evaluate(historyNHC(recovering.Status), append(healthy, testNode("sick")), nil)
	got := done.Status.RemediationHistory[0]
	assert.Equal(t, v1alpha1.OutcomeRecovered, got.Outcome)
	assert.Equal(t, at(now), got.Finished)
	assert.Nil(t, got.Fenced, "never seen fenced")
	assert.True(t, !got.Detected.After(got.Started.Time) && !got.Started.After(got.Finished.Time), "detected ≤ started ≤ finished")
}

func TestHistoryIsRebuiltFromTheClusterAfterALostStatusWrite(t *testing.T) {
	// A resource created 10s ago whose status write was lost: the record is
	// the one the lost write would have held.
	resources := remediations(snrRemediation("sick", 10*time.Second))
	d := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{}), append(nodes("healthy", 2), testNode("sick", unhealthy)), resources)
	require.Len(t, d.Status.RemediationHistory, 1)
	r := d.Status.RemediationHistory[0]
	assert.Equal(t, metav1.NewTime(now.Add(-10*time.Second)), r.Started)
	assert.Equal(t, metav1.NewTime(now.Add(-time.Hour+conditionDuration)), r.Detected)
	assert.Equal(t, corev1.NodeReady, r.ConditionType)

	// Found running on a node that is healthy again (an upgrade from a
	// version without history): the condition is unknown, detected is started.
	healthyAgain := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{}, healthyDelay(time.Hour)), append(nodes("healthy", 2), testNode("sick")), resources)
	r = healthyAgain.Status.RemediationHistory[0]
	assert.Empty(t, r.ConditionType)
	assert.Equal(t, r.Started, r.Detected)
}

func TestHistoryRecordsEscalationSteps(t *testing.T) {
	first, second := template("FirstTemplate", "first"), template("SecondTemplate", "second")
	nhcOpts := escalating(escalationStep(first, 1, time.Minute), escalationStep(second, 2, time.Minute))
	list := append(nodes("healthy", 2), testNode("sick", unhealthy))

	// The first step ran for two minutes: it times out, the second starts.
	running := remediationsFor("sick", remediationOf(first, "sick", 2*time.Minute))
	d := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{}, nhcOpts), list, running)
	require.Len(t, d.Create, 1)
	createAll(&d)
	r := d.Status.RemediationHistory[0]
	require.Len(t, r.Steps, 2)
	assert.Equal(t, "First", r.Steps[0].Kind)
	assert.Equal(t, at(now), r.Steps[0].TimedOut)
	assert.Equal(t, "Second", r.Steps[1].Kind)
	assert.Nil(t, r.Steps[1].TimedOut)
	assert.Equal(t, metav1.NewTime(now.Add(-2*time.Minute)), r.Started, "started is the first step's creation")
	assert.Equal(t, v1alpha1.OutcomeRemediating, r.Outcome)

	// Two minutes later the second step times out too: every step is spent.
	both := remediationsFor("sick",
		remediationOf(first, "sick", 2*time.Minute, timedOutAnnotation(now)),
		remediationOf(second, "sick", 0))
	later := now.Add(2 * time.Minute)
	spent := decide(Input{NHC: historyNHC(d.Status, nhcOpts), Nodes: list, Remediations: both, Now: later})
	r = spent.Status.RemediationHistory[0]
	assert.Equal(t, at(later), r.Steps[1].TimedOut)
	assert.Equal(t, v1alpha1.OutcomeTimedOut, r.Outcome)
	assert.Nil(t, r.Finished, "the resources stay until the node is healthy")
	assert.Len(t, r.Steps, 2, "the same two steps, updated")

	// Healthy again and the resources gone: finished, still TimedOut.
	done := evaluate(historyNHC(spent.Status, nhcOpts), append(nodes("healthy", 2), testNode("sick")), nil)
	r = done.Status.RemediationHistory[0]
	assert.Equal(t, v1alpha1.OutcomeTimedOut, r.Outcome)
	assert.Equal(t, at(now), r.Finished)
}

func TestHistoryOutcomeOfANodeThatLeftTheSelection(t *testing.T) {
	open := func(node string) v1alpha1.NodeHealthCheckStatus {
		return v1alpha1.NodeHealthCheckStatus{
			UnhealthyNodes: []*v1alpha1.UnhealthyNode{{Name: node, Remediations: []*v1alpha1.Remediation{{
				Resource: snrRemediation(node, time.Hour).Ref, Started: metav1.NewTime(now.Add(-time.Hour)), TemplateName: "automatic",
			}}}},
			RemediationHistory: []v1alpha1.RemediationRecord{{
				TargetKind: "Node", TargetName: node, Detected: metav1.NewTime(now.Add(-2 * time.Hour)), Started: metav1.NewTime(now.Add(-time.Hour)),
				Outcome: v1alpha1.OutcomeRemediating,
			}},
		}
	}
	cases := []struct {
		name        string
		deleted     bool
		resources   bool
		wantOutcome v1alpha1.RemediationOutcome
		wantFenced  bool
		wantOpen    bool
	}{
		{"deleted, its resource still there", true, true, v1alpha1.OutcomeRemediating, true, true},
		{"deleted, its resource gone", true, false, v1alpha1.OutcomeNodeDeleted, true, false},
		{"no longer selected, its resource gone", false, false, v1alpha1.OutcomeCancelled, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resources map[string][]Remediation
			if tc.resources {
				resources = remediations(snrRemediation("gone", time.Hour, permanentNodeDeletion))
			}
			in := Input{NHC: historyNHC(open("gone")), Nodes: nodes("healthy", 2), Remediations: resources, Now: now}
			if tc.deleted {
				in.DeletedNodes = map[string]bool{"gone": true}
			}
			r := decide(in).Status.RemediationHistory[0]
			assert.Equal(t, tc.wantOutcome, r.Outcome)
			assert.Equal(t, tc.wantFenced, r.Fenced != nil)
			assert.Equal(t, tc.wantOpen, r.Finished == nil)
		})
	}
}

func TestHistoryFencedByTheOutOfServiceTaint(t *testing.T) {
	resources := remediations(snrRemediation("sick", 10*time.Minute))
	taint := func(added *metav1.Time) nodeOption {
		return func(n *nodeview.Node) {
			n.OutOfService = &corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute, TimeAdded: added}
		}
	}
	cases := []struct {
		name string
		node *nodeview.Node
		want *metav1.Time
	}{
		{"no taint", testNode("sick", unhealthy), nil},
		{"tainted 5 minutes ago", testNode("sick", unhealthy, taint(at(now.Add(-5*time.Minute)))), at(now.Add(-5 * time.Minute))},
		{"tainted without a time: when seen", testNode("sick", unhealthy, taint(nil)), at(now)},
		{"tainted before the remediation started: its start", testNode("sick", unhealthy, taint(at(now.Add(-time.Hour)))), at(now.Add(-10 * time.Minute))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{}), append(nodes("healthy", 2), tc.node), resources)
			assert.Equal(t, tc.want, d.Status.RemediationHistory[0].Fenced)
		})
	}
}

func TestHistoryKeepsTheNewestWithinItsBound(t *testing.T) {
	var old []v1alpha1.RemediationRecord
	for i := range 60 {
		started := now.Add(-time.Duration(i+1) * time.Hour)
		old = append(old, v1alpha1.RemediationRecord{
			TargetKind: "Node", TargetName: fmt.Sprintf("old-%02d", i), Detected: metav1.NewTime(started), Started: metav1.NewTime(started),
			Finished: at(started.Add(time.Minute)), Outcome: v1alpha1.OutcomeRecovered,
		})
	}
	d := evaluate(historyNHC(v1alpha1.NodeHealthCheckStatus{RemediationHistory: old}), append(nodes("healthy", 2), testNode("sick", unhealthy)), nil)
	createAll(&d)
	h := d.Status.RemediationHistory
	require.Len(t, h, v1alpha1.MaxRemediationHistory)
	assert.Equal(t, "sick", h[0].TargetName, "newest first")
	assert.Equal(t, "old-00", h[1].TargetName)
	assert.Equal(t, "old-48", h[49].TargetName, "the oldest are dropped")
}

func TestHistoryLeavesAPendingNodesRecordOpen(t *testing.T) {
	status := v1alpha1.NodeHealthCheckStatus{RemediationHistory: []v1alpha1.RemediationRecord{{
		TargetKind: "Node", TargetName: "sick", Detected: metav1.NewTime(now), Started: metav1.NewTime(now), Outcome: v1alpha1.OutcomeRemediating,
	}}}
	// The caches do not show the controller's last write for the node: its
	// resources are not known, so its remediation has not ended.
	d := decide(Input{NHC: historyNHC(status), Nodes: append(nodes("healthy", 2), testNode("sick")), PendingNodes: map[string]bool{"sick": true}, Now: now})
	assert.Nil(t, d.Status.RemediationHistory[0].Finished)
}

func TestHistoryDropsASecondOpenRecordOfANode(t *testing.T) {
	record := func(started time.Time) v1alpha1.RemediationRecord {
		return v1alpha1.RemediationRecord{TargetKind: "Node", TargetName: "sick", Detected: metav1.NewTime(started), Started: metav1.NewTime(started), Outcome: v1alpha1.OutcomeRemediating}
	}
	status := v1alpha1.NodeHealthCheckStatus{RemediationHistory: []v1alpha1.RemediationRecord{record(now.Add(-time.Minute)), record(now.Add(-time.Hour))}}
	d := evaluate(historyNHC(status), append(nodes("healthy", 2), testNode("sick", unhealthy)), remediations(snrRemediation("sick", time.Minute)))
	require.Len(t, d.Status.RemediationHistory, 1)
	assert.Equal(t, metav1.NewTime(now.Add(-time.Minute)), d.Status.RemediationHistory[0].Started)
}

// sameRecord is written out field by field: each field of a record and of
// its steps, changed alone, makes records differ, and a time in another
// location does not. A field added to the types fails here until compared.
func TestSameRecordComparesEveryField(t *testing.T) {
	instant := metav1.NewTime(time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC))
	full := func() v1alpha1.RemediationRecord {
		return v1alpha1.RemediationRecord{
			TargetKind: v1alpha1.TargetKindNode, TargetName: "worker-1", ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse,
			Detected: instant, Started: instant, Fenced: instant.DeepCopy(), Finished: instant.DeepCopy(), Outcome: v1alpha1.OutcomeRecovered,
			Steps: []v1alpha1.RemediationRecordStep{{Kind: "SelfNodeRemediation", Name: "worker-1", TemplateName: "t", Started: instant, TimedOut: instant.DeepCopy()}},
		}
	}
	a, b := full(), full()
	require.True(t, sameRecord(&a, &b))
	b.Started = metav1.NewTime(instant.In(time.FixedZone("CET", 3600)))
	assert.True(t, sameRecord(&a, &b), "the same instant in another location")

	// changeEachField calls check after changing each field reachable from
	// v (a struct), one at a time, and puts it back.
	var changeEachField func(path string, v reflect.Value, check func(path string))
	changeEachField = func(path string, v reflect.Value, check func(path string)) {
		for i := range v.NumField() {
			field, name := v.Field(i), path+"."+v.Type().Field(i).Name
			saved := reflect.New(field.Type()).Elem()
			saved.Set(field)
			switch {
			case field.Type() == reflect.TypeFor[metav1.Time]():
				field.Set(reflect.ValueOf(metav1.NewTime(instant.Add(time.Second))))
			case field.Type() == reflect.TypeFor[*metav1.Time]():
				field.Set(reflect.Zero(field.Type()))
			case field.Kind() == reflect.String:
				field.SetString(field.String() + "x")
			case field.Kind() == reflect.Slice && field.Type().Elem().Kind() == reflect.Struct:
				field.Set(field.Slice(0, 0))
				check(name + " empty")
				field.Set(saved)
				changeEachField(name+"[0]", field.Index(0), check)
				continue
			default:
				t.Fatalf("%s: a field of type %s, which this test cannot change: teach it, and sameRecord", name, field.Type())
			}
			check(name)
			field.Set(saved)
		}
	}
	changed := full()
	changeEachField("record", reflect.ValueOf(&changed).Elem(), func(path string) {
		original := full()
		assert.False(t, sameRecord(&original, &changed), "%s changed", path)
		assert.False(t, sameRecord(&changed, &original), "%s changed", path)
	})
}

// isBounded says what boundHistory does: a history it calls bounded comes
// out of boundHistory as it went in, and one it does not comes out
// otherwise. Drawn histories: starts and ends within seconds of each
// other (ties), open and finished records, a few over the bound.
func TestIsBoundedIsBoundHistoryLeavingItAsItIs(t *testing.T) {
	random := rand.New(rand.NewPCG(1, 2))
	instant := func() metav1.Time { return metav1.NewTime(now.Add(time.Duration(random.IntN(4)) * time.Second)) }
	bounded := 0
	for range 5000 {
		var history []v1alpha1.RemediationRecord
		for range random.IntN(v1alpha1.MaxRemediationHistory + 3) {
			r := v1alpha1.RemediationRecord{TargetKind: v1alpha1.TargetKindNode, TargetName: fmt.Sprintf("node-%d", random.IntN(3)), Started: instant()}
			if random.IntN(2) == 0 {
				r.Finished = ptr.To(instant())
			}
			history = append(history, r)
		}
		if random.IntN(2) == 0 {
			// Mostly in order, as the controller writes it.
			slices.SortStableFunc(history, newestFirst)
		}
		left := sameHistory(boundHistory(slices.Clone(history)), history)
		require.Equal(t, left, isBounded(history), "%+v", history)
		if left {
			bounded++
		}
	}
	assert.Greater(t, bounded, 500, "both kinds drawn")
	assert.Less(t, bounded, 4500, "both kinds drawn")
}
