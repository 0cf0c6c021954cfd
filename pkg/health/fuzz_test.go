package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// fuzzReader turns fuzz bytes into choices; past the end it reads zeros.
type fuzzReader struct {
	data []byte
	pos  int
	// made counts the resources made, to keep their names and UIDs unique.
	made int
}

func (r *fuzzReader) intn(n int) int {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return int(b) % n
}

func (r *fuzzReader) oneIn(n int) bool { return r.intn(n) == 0 }

func (r *fuzzReader) seconds(maxSeconds int) time.Duration {
	return time.Duration(r.intn(256)*maxSeconds/255) * time.Second
}

// fuzzInput builds an Input from fuzz bytes: a spec, up to 40 nodes with
// resources, orphans, and a previous status from an earlier evaluation.
// The helpers read the bytes in this order: templates, budget, pause and
// delays, problems, nodes, orphans, leases, and the earlier evaluation's
// time; keep it, for the corpus under testdata/fuzz to keep its meaning.
func fuzzInput(data []byte) Input {
	r := &fuzzReader{data: data}
	nhc := testNHC()
	templates := fuzzTemplates(r, &nhc.Spec)
	fuzzBudget(r, &nhc.Spec)
	fuzzPauseAndDelays(r, &nhc.Spec)
	in := Input{NHC: nhc, Remediations: map[string][]Remediation{}, Now: now}
	fuzzProblems(r, &in)
	fuzzNodes(r, &in, templates)
	fuzzOrphans(r, &in, templates)
	for name, resources := range in.Remediations {
		if len(resources) == 0 {
			delete(in.Remediations, name)
		}
	}
	fuzzLeases(r, &in)
	// A previous evaluation, a little earlier, gives the status its memory.
	earlier := in
	earlier.Now = now.Add(-r.seconds(600))
	nhc.Status = decide(earlier).Status
	return in
}

// fuzzTemplates sets one template or an escalation of up to three, and
// returns the templates resources may be of: the spec's, and one gone.
func fuzzTemplates(r *fuzzReader, spec *v1alpha1.NodeHealthCheckSpec) []corev1.ObjectReference {
	var templates []corev1.ObjectReference
	if r.oneIn(2) {
		spec.RemediationTemplate = nil
		for i, t := range []corev1.ObjectReference{templateA, multiOne, multiTwo}[:1+r.intn(3)] {
			spec.EscalatingRemediations = append(spec.EscalatingRemediations, escalationStep(t, 10-i*r.intn(3), time.Minute+r.seconds(600)))
			templates = append(templates, t)
		}
	} else {
		templates = append(templates, snrTemplate)
	}
	return append(templates, template("GoneTemplate", "gone"))
}

// fuzzBudget sets minHealthy or maxUnhealthy, a number or a percentage.
func fuzzBudget(r *fuzzReader, spec *v1alpha1.NodeHealthCheckSpec) {
	switch r.intn(4) {
	case 0:
		spec.MinHealthy = ptr.To(intstr.FromInt32(int32(r.intn(12))))
	case 1:
		spec.MinHealthy = ptr.To(intstr.FromString(fmt.Sprintf("%d%%", r.intn(101))))
	case 2:
		spec.MinHealthy, spec.MaxUnhealthy = nil, ptr.To(intstr.FromInt32(int32(r.intn(12))))
	default:
		spec.MinHealthy, spec.MaxUnhealthy = nil, ptr.To(intstr.FromString(fmt.Sprintf("%d%%", r.intn(101))))
	}
}

// fuzzPauseAndDelays may pause, and may set the healthy delay and the
// storm settings.
func fuzzPauseAndDelays(r *fuzzReader, spec *v1alpha1.NodeHealthCheckSpec) {
	if r.oneIn(8) {
		spec.PauseRequests = []string{"fuzz"}
	}
	switch r.intn(4) {
	case 1:
		spec.HealthyDelay = &metav1.Duration{Duration: r.seconds(300)}
	case 2:
		spec.HealthyDelay = &metav1.Duration{Duration: -time.Second}
	}
	if r.oneIn(3) {
		spec.StormRecoveryThreshold = ptr.To(int32(r.intn(6)))
	}
	if r.oneIn(3) {
		spec.StormCooldownDuration = &metav1.Duration{Duration: r.seconds(60)}
	}
}

// fuzzProblems may disable remediation, make a control-plane node busy with
// another owner's remediation, and leave a node's last write pending.
func fuzzProblems(r *fuzzReader, in *Input) {
	if r.oneIn(16) {
		in.RemediationProblem = &Problem{Reason: v1alpha1.ReasonTemplateNotFound, Message: "fuzz"}
	}
	if r.oneIn(8) {
		in.BusyControlPlaneNodes = map[string]bool{fmt.Sprintf("node-%d", r.intn(50)): true}
	}
	if r.oneIn(8) {
		in.PendingNodes = map[string]bool{fmt.Sprintf("node-%d", r.intn(50)): true}
	}
}

// fuzzNodes adds up to 40 nodes, each with up to two resources and maybe
// other NodeHealthChecks' claims.
func fuzzNodes(r *fuzzReader, in *Input, templates []corev1.ObjectReference) {
	nodeCount := r.intn(41)
	for i := range nodeCount {
		name := fmt.Sprintf("node-%d", i)
		node := testNode(name, fuzzNodeOptions(r)...)
		in.Nodes = append(in.Nodes, node)
		for range r.intn(3) {
			in.Remediations[name] = append(in.Remediations[name], fuzzRemediation(r, templates, name, v1alpha1.IsControlPlane(node.Labels)))
		}
		if r.oneIn(4) {
			fuzzClaims(r, in, name)
		}
	}
}

// fuzzNodeOptions are a node's Ready condition, and maybe its control-plane
// role, an exclusion label and a confirmation of health.
func fuzzNodeOptions(r *fuzzReader) []nodeOption {
	statuses := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}
	opts := []nodeOption{condition(corev1.NodeReady, statuses[r.intn(3)], r.seconds(900))}
	if r.oneIn(5) {
		opts = append(opts, controlPlane)
	}
	switch r.intn(8) {
	case 0:
		opts = append(opts, label(v1alpha1.ExcludeFromRemediationLabel, "true"))
	case 1:
		opts = append(opts, label(v1alpha1.ExcludeFromRemediationLabel, ""))
	}
	if r.oneIn(8) {
		opts = append(opts, confirmedHealthy)
	}
	return opts
}

// fuzzOrphans adds up to two resources of nodes that are gone.
func fuzzOrphans(r *fuzzReader, in *Input, templates []corev1.ObjectReference) {
	for i := range r.intn(3) {
		name := fmt.Sprintf("gone-%d", i)
		in.Remediations[name] = append(in.Remediations[name], fuzzRemediation(r, templates, name, r.oneIn(3)))
	}
}

// fuzzLeases may give node leases: up to 12, ours, the node maintenance
// operator's or another NodeHealthCheck's.
func fuzzLeases(r *fuzzReader, in *Input) {
	if r.oneIn(2) {
		in.Leases = &Leases{ByNode: map[string]NodeLease{}, Duration: time.Minute + r.seconds(600), Buffer: r.seconds(60)}
		holders := []string{LeaseHolder(in.NHC.Name), "node-maintenance-operator", LeaseHolder("other")}
		for range r.intn(12) {
			renewed := now.Add(-r.seconds(1800))
			in.Leases.ByNode[fmt.Sprintf("node-%d", r.intn(45))] = NodeLease{
				Holder: holders[r.intn(3)], Acquired: renewed.Add(-r.seconds(1800)), Renewed: renewed, Duration: r.seconds(900),
			}
		}
	}
}

// fuzzClaims lets other NodeHealthChecks, older or younger, with or without
// resources, claim a node.
func fuzzClaims(r *fuzzReader, in *Input, node string) {
	if in.Claims == nil {
		in.Claims = map[string][]Claim{}
		in.NHC.CreationTimestamp = metav1.NewTime(created)
	}
	for i := range 1 + r.intn(3) {
		c := Claim{Peer: peer(fmt.Sprintf("peer-%d", i), time.Duration(r.intn(3)-1)*time.Hour), Selects: !r.oneIn(4), Remediating: r.oneIn(3)}
		in.Claims[node] = append(in.Claims[node], c)
	}
}

func fuzzRemediation(r *fuzzReader, templates []corev1.ObjectReference, node string, cp bool) Remediation {
	t := templates[r.intn(len(templates))]
	r.made++
	rem := remediationOf(t, node, r.seconds(3600), generatedName(fmt.Sprintf("%s-%d", node, r.made)))
	rem.Succeeded = []metav1.ConditionStatus{"", metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}[r.intn(4)]
	rem.Deleting = r.oneIn(8)
	rem.PermanentNodeDeletionExpected = r.oneIn(8)
	rem.ControlPlane = cp
	if r.oneIn(4) {
		rem.TimedOut = now.Add(-r.seconds(600))
	}
	if r.oneIn(4) {
		rem.HealthyDelayStart = now.Add(-r.seconds(600))
	}
	rem.FlaggedOld = r.oneIn(4)
	return rem
}

func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(strings.Repeat("\x01\x02\x03\x05\x07\x0b\x0d", 40)))
	f.Add([]byte(strings.Repeat("\x00\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0", 30)))
	f.Add([]byte(strings.Repeat("\xff\x01", 200)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		d := decide(in)
		if broken := checkInvariants(in, d); len(broken) > 0 {
			t.Fatalf("invariants broken:\n%s", strings.Join(broken, "\n"))
		}
	})
}

func FuzzMinHealthy(f *testing.F) {
	f.Add(true, int32(3), "51%", 10)
	f.Add(false, int32(-1), "120%", 0)
	f.Add(false, int32(0), "007", 3)
	f.Fuzz(func(t *testing.T, useInt bool, intValue int32, stringValue string, observed int) {
		observed = max(observed%100000, 0)
		value := intstr.FromString(stringValue)
		if useInt {
			value = intstr.FromInt32(intValue)
		}
		for _, spec := range []v1alpha1.NodeHealthCheckSpec{{MinHealthy: &value}, {MaxUnhealthy: &value}} {
			got, err := minHealthyOf(&spec, observed)
			if err != nil {
				continue
			}
			if got < 0 {
				t.Fatalf("negative minHealthy %d for %v of %d", got, value, observed)
			}
			if spec.MaxUnhealthy != nil && got > observed {
				t.Fatalf("maxUnhealthy %v of %d asks for %d healthy nodes", value, observed, got)
			}
		}
	})
}
