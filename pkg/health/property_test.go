package health

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// TestPropertyRandomNodeChanges drives random sequences of node condition
// changes, clock steps, pauses and remediator results through many
// evaluations, applying each decision, and checks the invariants at every
// step and over time.
func TestPropertyRandomNodeChanges(t *testing.T) {
	const runs, steps = 400, 60
	for run := range runs {
		rng := rand.New(rand.NewPCG(uint64(run), 42))
		s := newSimulation(randomNHC(rng), 4+rng.IntN(20))
		for i, n := range s.nodes {
			if rng.IntN(4) == 0 {
				s.nodes[i] = testNode(n.Name, controlPlane)
			}
		}
		var history []string
		for step := range steps {
			history = append(history, s.randomChange(rng))
			// The simulation's result includes its creations in the status.
			d := s.evaluate()
			broken := checkInvariants(s.lastInput, d)
			broken = append(broken, s.checkOverTime()...)
			if len(broken) > 0 {
				t.Fatalf("run %d, step %d: %s\nafter: %s", run, step, strings.Join(broken, "; "), strings.Join(history, ", "))
			}
		}
	}
}

func randomNHC(rng *rand.Rand) *v1alpha1.NodeHealthCheck {
	opts := []nhcOption{minHealthy(intstr.FromString(fmt.Sprintf("%d%%", rng.IntN(80))))}
	if rng.IntN(2) == 0 {
		opts = append(opts, threeSteps())
	}
	if rng.IntN(3) == 0 {
		opts = append(opts, stormThreshold(int32(rng.IntN(4))))
	}
	if rng.IntN(4) == 0 {
		opts = append(opts, stormCooldown(time.Duration(rng.IntN(120))*time.Second))
	}
	switch rng.IntN(4) {
	case 0:
		opts = append(opts, healthyDelay(time.Duration(1+rng.IntN(300))*time.Second))
	case 1:
		opts = append(opts, healthyDelay(-time.Second))
	}
	return testNHC(opts...)
}

// randomChange changes the simulated cluster a little and says how.
func (s *simulation) randomChange(rng *rand.Rand) string {
	node := s.nodes[rng.IntN(len(s.nodes))].Name
	switch rng.IntN(11) {
	case 0, 1:
		s.setReady(node, corev1.ConditionFalse, time.Duration(rng.IntN(600))*time.Second)
		return "fail " + node
	case 2:
		s.setReady(node, corev1.ConditionUnknown, time.Duration(rng.IntN(600))*time.Second)
		return "unknown " + node
	case 3, 4:
		s.recover(node)
		return "recover " + node
	case 5:
		if len(s.nhc.Spec.PauseRequests) > 0 {
			s.nhc.Spec.PauseRequests = nil
			return "resume"
		}
		s.nhc.Spec.PauseRequests = []string{"maintenance"}
		return "pause"
	case 6:
		for n := range s.resources {
			r := &s.resources[n][len(s.resources[n])-1]
			r.Succeeded = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse}[rng.IntN(2)]
			return fmt.Sprintf("%s reports Succeeded=%s", r.Ref.Name, r.Succeeded)
		}
		return "nothing"
	case 7:
		if rng.IntN(2) == 0 {
			s.nhc.Status = s.lastStatus
			return "the last status write is lost"
		}
		s.nodes[rng.IntN(len(s.nodes))].Annotations = map[string]string{"remediation.medik8s.io/manually-confirmed-healthy": ""}
		return "confirm"
	case 8:
		// Someone else deletes a resource: its remediator when done, or
		// an admin.
		for n := range s.resources {
			uid := s.resources[n][0].Ref.UID
			s.resources[n] = s.resources[n][1:]
			if len(s.resources[n]) == 0 {
				delete(s.resources, n)
			}
			return fmt.Sprintf("resource %s of %s deleted", uid, n)
		}
		return "nothing"
	default:
		d := time.Duration(rng.IntN(400)) * time.Second
		s.advance(d)
		return "wait " + d.String()
	}
}

// checkOverTime checks what must hold across evaluations: a node has at most
// one running resource and never two of one step, and at most one
// control-plane node is under remediation.
func (s *simulation) checkOverTime() []string {
	var broken []string
	controlPlaneNodes := 0
	for node, resources := range s.resources {
		running := 0
		templates := map[string]bool{}
		for _, r := range resources {
			if r.TimedOut.IsZero() && !r.Deleting && !timedOutInStatus(s, node, r) {
				running++
			}
			if templates[r.TemplateName] {
				broken = append(broken, fmt.Sprintf("node %s has two resources of template %s", node, r.TemplateName))
			}
			templates[r.TemplateName] = true
		}
		if running > 1 {
			broken = append(broken, fmt.Sprintf("node %s has %d running remediations", node, running))
		}
		if anyControlPlane(resources) {
			controlPlaneNodes++
		}
	}
	if controlPlaneNodes > 1 {
		broken = append(broken, fmt.Sprintf("%d control-plane nodes under remediation", controlPlaneNodes))
	}
	return broken
}

func timedOutInStatus(s *simulation, node string, r Remediation) bool {
	for _, e := range s.nhc.Status.UnhealthyNodes {
		if e.Name == node {
			if rem := entryRemediation(e, r.Ref.UID); rem != nil && rem.TimedOut != nil {
				return true
			}
		}
	}
	return false
}
