package faults

import (
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// startController runs the controller through the proxy.
func startController(t *testing.T, name string) {
	t.Helper()
	c, err := env.StartControllerWithKubeconfig(name, proxy.Kubeconfig, "--leader-elect=false")
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Stop())
		if t.Failed() {
			c.DumpLog(os.Stderr)
		}
	})
}

// startSeeingThreeNodes creates the scenario's template, three nodes and
// NodeHealthCheck (with the change), starts the controller behind the
// proxy, and waits until its status counts the three nodes healthy.
func startSeeingThreeNodes(t *testing.T, scenario string, change func(*v1alpha1.NodeHealthCheckSpec)) []string {
	t.Helper()
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	env.CreateNHC(t, scenario, change)
	startController(t, scenario)
	framework.Eventually(t, 10*time.Second, "the controller to see the nodes", func() bool {
		s := env.GetNHC(t, scenario).Status
		return s.HealthyNodes != nil && *s.HealthyNodes == 3
	})
	return nodes
}

// settled waits until the cluster shows what the node conditions ask for,
// then checks that it holds: every unhealthy node has exactly one resource
// per template, every healthy node none, and the status lists exactly the
// resources that exist.
func settled(t *testing.T, scenario string, unhealthy, healthy []string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, "the cluster to settle", func() bool {
		resources := env.Remediations(t, scenario)
		for _, n := range unhealthy {
			if len(resources[n]) == 0 {
				return false
			}
		}
		for _, n := range healthy {
			if len(resources[n]) > 0 {
				return false
			}
		}
		return statusMatches(t, scenario) == ""
	})
	framework.Consistently(t, 3*time.Second, "no duplicate and the status in step", func() bool {
		resources := env.Remediations(t, scenario)
		for node, list := range resources {
			templates := map[string]bool{}
			for _, r := range list {
				template := r.GetAnnotations()[v1alpha1.TemplateNameAnnotation]
				if !assert.False(t, templates[template], "two resources of template %s for node %s", template, node) {
					return false
				}
				templates[template] = true
			}
		}
		for _, n := range healthy {
			if !assert.Empty(t, resources[n], "a resource for the recovered node %s", n) {
				return false
			}
		}
		return assert.Empty(t, statusMatches(t, scenario))
	})
}

// statusMatches says how the status differs from the resources, or "".
func statusMatches(t *testing.T, scenario string) string {
	exist := map[string][]string{}
	for node, list := range env.Remediations(t, scenario) {
		for _, r := range list {
			exist[node] = append(exist[node], string(r.GetUID()))
		}
		sort.Strings(exist[node])
	}
	listed := map[string][]string{}
	for _, entry := range env.GetNHC(t, scenario).Status.UnhealthyNodes {
		for _, rem := range entry.Remediations {
			if rem.TimedOut == nil {
				listed[entry.Name] = append(listed[entry.Name], string(rem.Resource.UID))
			}
		}
		sort.Strings(listed[entry.Name])
	}
	if !assert.ObjectsAreEqual(exist, listed) {
		return "the status lists other resources than exist"
	}
	return ""
}

// oneEach says whether exactly these nodes have resources, one each.
func oneEach(t *testing.T, scenario string, nodes []string) bool {
	resources := env.Remediations(t, scenario)
	for _, n := range nodes {
		if len(resources[n]) != 1 {
			return false
		}
	}
	return len(resources) == len(nodes)
}

func newScenario(t *testing.T, scenario string, multi bool) []string {
	t.Helper()
	var annotations map[string]string
	if multi {
		annotations = map[string]string{v1alpha1.MultipleTemplatesSupportAnnotation: "true"}
	}
	env.CreateTemplate(t, scenario, annotations)
	nodes := env.CreateNodes(t, scenario, 10)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.HealthyDelay = &metav1.Duration{}
	})
	return nodes
}

func TestWritesFailingForAWhile(t *testing.T) {
	const scenario = "failingwrites"
	nodes := newScenario(t, scenario, false)
	startController(t, scenario)
	framework.Eventually(t, 30*time.Second, "the first status", func() bool {
		return env.GetNHC(t, scenario).Status.ObservedNodes != nil
	})

	proxy.FailWrites(true)
	env.Fail(t, time.Hour, nodes[:5]...)
	framework.Consistently(t, 8*time.Second, "nothing can be written", func() bool {
		return len(env.Remediations(t, scenario)) == 0
	})
	env.Recover(t, nodes[4])
	proxy.FailWrites(false)
	settled(t, scenario, nodes[:4], nodes[4:])
}

func TestTheAPIServerUnreachableMidRemediation(t *testing.T) {
	const scenario = "unreachable"
	nodes := newScenario(t, scenario, false)
	startController(t, scenario)
	env.Fail(t, time.Hour, nodes[:3]...)
	settled(t, scenario, nodes[:3], nodes[3:])

	// As if the API server restarted: every connection drops, and for a
	// while nothing answers. Meanwhile nodes fail and recover.
	proxy.Unreachable(true)
	env.Recover(t, nodes[0])
	env.Fail(t, time.Hour, nodes[3], nodes[4])
	framework.Consistently(t, 8*time.Second, "the resources unchanged while nothing answers", func() bool {
		return oneEach(t, scenario, nodes[:3])
	})
	env.Recover(t, nodes[4])
	proxy.Unreachable(false)
	settled(t, scenario, []string{nodes[1], nodes[2], nodes[3]}, append([]string{nodes[0], nodes[4]}, nodes[5:]...))
}

func TestLostCreateResponsesMakeNoSecondResource(t *testing.T) {
	const scenario = "lostcreates"
	nodes := newScenario(t, scenario, true)
	startController(t, scenario)
	framework.Eventually(t, 30*time.Second, "the first status", func() bool {
		return env.GetNHC(t, scenario).Status.ObservedNodes != nil
	})
	// The API server stores each create, and the controller hears a 500.
	proxy.LoseCreates("/testremediations")
	env.Fail(t, time.Hour, nodes[:3]...)
	framework.Eventually(t, 30*time.Second, "the resources, stored despite the errors", func() bool {
		return len(env.Remediations(t, scenario)) == 3
	})
	// Retries while creates are still lost meet the stored resources.
	framework.Consistently(t, 3*time.Second, "one resource per failed node", func() bool {
		return oneEach(t, scenario, nodes[:3])
	})
	proxy.LoseCreates("")
	settled(t, scenario, nodes[:3], nodes[3:])
	for _, n := range nodes[:3] {
		require.Len(t, env.Remediations(t, scenario)[n], 1, "one resource for %s", n)
	}
}
