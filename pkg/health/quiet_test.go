package health

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// leaveOutQuiet is what a caller may do with an input: leave out of Nodes
// each node that Quietness calls quiet and NamedNodes does not name,
// counting it in QuietNodes. It returns the names left out.
func leaveOutQuiet(in Input) (Input, map[string]bool) {
	q := QuietnessOf(&in.NHC.Spec)
	named := map[string]bool{}
	for name := range NamedNodes(&in) {
		named[name] = true
	}
	reduced, left := in, map[string]bool{}
	reduced.Nodes = nil
	for _, node := range in.Nodes {
		if q.Quiet(node) && !named[node.Name] {
			reduced.QuietNodes++
			left[node.Name] = true
			continue
		}
		reduced.Nodes = append(reduced.Nodes, node)
	}
	return reduced, left
}

// quietDifference leaves an input's quiet nodes out and compares its
// decision with the whole's (CompareLeftOut); "" when they are alike.
func quietDifference(in Input) string {
	reduced, left := leaveOutQuiet(in)
	var quiet []*nodeview.Node
	for _, node := range in.Nodes {
		if left[node.Name] {
			quiet = append(quiet, node)
		}
	}
	if err := CompareLeftOut(reduced, quiet); err != nil {
		return err.Error()
	}
	return ""
}

// perturbed gives some nodes, quiet ones among them, a create retry
// (NamedNodes leaves them out, as a quiet node never waits for one), and
// may lose the earlier status's entries or records, as a lost status write
// does: resources the status does not show yet.
func perturbed(in Input, r *fuzzReader) Input {
	if lose := r.intn(4); lose < 2 {
		in.NHC = in.NHC.DeepCopy()
		if lose == 0 {
			in.NHC.Status.UnhealthyNodes = nil
		} else {
			in.NHC.Status.RemediationHistory = nil
		}
	}
	for _, node := range in.Nodes {
		if r.oneIn(6) {
			if in.CreateRetries == nil {
				in.CreateRetries = map[string]time.Time{}
			}
			in.CreateRetries[node.Name] = now.Add(r.seconds(120) - time.Minute)
		}
	}
	return in
}

// "A caller may leave quiet nodes out of Input.Nodes and count them in
// Input.QuietNodes: the plan, but for their verdicts, and the status are
// the same" (quiet.go), over the fuzz inputs of every rule: resources,
// orphans, leases, claims, pending writes, problems and an earlier status.
func TestLeavingOutQuietNodesChangesNeitherPlanNorStatus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	leftOut := 0
	for i := range 3000 {
		data := make([]byte, 40+rng.IntN(600))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		in := fuzzInput(data)
		in = perturbed(in, &fuzzReader{data: data[len(data)/2:]})
		_, left := leaveOutQuiet(in)
		leftOut += len(left)
		if diff := quietDifference(in); diff != "" {
			t.Fatalf("case %d: %s", i, diff)
		}
	}
	assert.Greater(t, leftOut, 1000, "the inputs have quiet nodes to leave out")
}

func FuzzLeavingOutQuietNodes(f *testing.F) {
	f.Add([]byte(strings.Repeat("\x01\x02\x03\x05\x07\x0b\x0d", 40)))
	f.Add([]byte(strings.Repeat("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0", 30)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := perturbed(fuzzInput(data), &fuzzReader{data: data[len(data)/2:]})
		if diff := quietDifference(in); diff != "" {
			t.Fatal(diff)
		}
	})
}

func TestQuietness(t *testing.T) {
	spec := &v1alpha1.NodeHealthCheckSpec{UnhealthyConditions: []v1alpha1.UnhealthyCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse},
		{Type: "DiskPressure", Status: corev1.ConditionTrue},
	}}
	q := QuietnessOf(spec)
	cases := []struct {
		name  string
		node  []nodeOption
		quiet bool
	}{
		{"ready", []nodeOption{condition(corev1.NodeReady, corev1.ConditionTrue, time.Hour)}, true},
		{"not ready a moment ago", []nodeOption{condition(corev1.NodeReady, corev1.ConditionFalse, 0)}, false},
		{"not ready for long", []nodeOption{condition(corev1.NodeReady, corev1.ConditionFalse, time.Hour)}, false},
		{"unknown, which this spec does not list", []nodeOption{condition(corev1.NodeReady, corev1.ConditionUnknown, time.Hour)}, true},
		{"confirmed healthy", []nodeOption{confirmedHealthy}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.quiet, q.Quiet(testNode("n", tc.node...)))
		})
	}
	assert.Equal(t, QuietnessOf(&v1alpha1.NodeHealthCheckSpec{}).Key(), QuietnessOf(&v1alpha1.NodeHealthCheckSpec{UnhealthyConditions: v1alpha1.DefaultUnhealthyConditions()}).Key(),
		"no conditions are the defaults")
	longer := spec.DeepCopy()
	longer.UnhealthyConditions[0].Duration.Duration = time.Hour
	assert.Equal(t, q.Key(), QuietnessOf(longer).Key(), "a duration tells no node otherwise")
	assert.NotEqual(t, q.Key(), QuietnessOf(&v1alpha1.NodeHealthCheckSpec{}).Key())
}

// A healthy node whose resource someone else deleted still has its status
// entry and its open record: the next evaluation ends its incident as
// recovered, which it can only if the node is not left out as quiet.
func TestANodeTheStatusNamesIsNotLeftOut(t *testing.T) {
	s := newSimulation(testNHC(healthyDelay(time.Hour)), 3)
	s.fail("node-00")
	s.evaluate()
	s.advance(time.Minute)
	s.recover("node-00")
	s.evaluate()
	s.resources = map[string][]Remediation{}
	s.advance(time.Minute)

	in := Input{NHC: s.nhc, Nodes: s.nodes, Now: s.clock}
	_, left := leaveOutQuiet(in)
	assert.Equal(t, map[string]bool{"node-01": true, "node-02": true}, left)
	assert.Empty(t, quietDifference(in))
	history := decide(in).Status.RemediationHistory
	if assert.Len(t, history, 1) {
		assert.Equal(t, v1alpha1.OutcomeRecovered, history[0].Outcome)
	}
}
