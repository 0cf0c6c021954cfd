package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// remediationEnv is pkg/remediation wired to the real API server, as the
// controller wires it.
type remediationEnv struct {
	manager   *remediation.Manager
	informers *remediation.Informers
	// mapperClock drives the throttle of API rediscovery.
	mapperClock *clocktesting.FakePassiveClock
}

func newRemediationEnv(t *testing.T) *remediationEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cluster.Config)))
	expectations := remediation.NewExpectations(clock.RealClock{})
	informers := remediation.NewInformers(ctx, dynamicClient, expectations.Observe)
	env := &remediationEnv{informers: informers, mapperClock: clocktesting.NewFakePassiveClock(time.Now())}
	templates := remediation.NewTemplates(mapper, informers, env.mapperClock)
	env.manager = remediation.NewManager(informers, templates, expectations, remediation.NewWriter(dynamicClient, kubeClient), clock.RealClock{})
	return env
}

// observe waits until the manager is ready to evaluate the NodeHealthCheck.
func (env *remediationEnv) observe(t *testing.T, nhc *v1alpha1.NodeHealthCheck) remediation.Observation {
	t.Helper()
	var obs remediation.Observation
	framework.Eventually(t, 30*time.Second, "the observation to be ready", func() bool {
		var err error
		obs, err = env.manager.Observe(nhc)
		require.NoError(t, err)
		return obs.Ready
	})
	return obs
}

// decide observes, evaluates at now, applies the decision and writes the status.
func (env *remediationEnv) decide(t *testing.T, nhc *v1alpha1.NodeHealthCheck, now time.Time) (health.Decision, remediation.Outcome) {
	t.Helper()
	nhc = fw.GetNHC(t, nhc.Name)
	obs := env.observe(t, nhc)
	d := health.Evaluate(health.Input{
		NHC: nhc, Nodes: selectedNodes(t, nhc), Remediations: obs.Remediations,
		BusyControlPlaneNodes: obs.BusyControlPlaneNodes, Problem: obs.Problem, Now: now,
	})
	out := env.manager.Apply(context.Background(), nhc, &d, &obs)
	require.Empty(t, out.Errors)
	nhc.Status = d.Status
	_, err := nhcClient.RemediationV1alpha1().NodeHealthChecks().UpdateStatus(context.Background(), nhc, metav1.UpdateOptions{})
	require.NoError(t, err)
	return d, out
}

// unhealthyNode creates a node of a scenario whose Ready condition has had
// a status for an hour.
func unhealthyNode(t *testing.T, scenario, name string, ready corev1.ConditionStatus) string {
	t.Helper()
	fw.CreateNode(t, scenario, name)
	fw.SetCondition(t, name, corev1.NodeReady, ready, time.Hour)
	return name
}

func selectedNodes(t *testing.T, nhc *v1alpha1.NodeHealthCheck) []*corev1.Node {
	t.Helper()
	list, err := kubeClient.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: framework.ScenarioLabel + "=" + nhc.Name})
	require.NoError(t, err)
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return nodes
}

// remediationsOf lists the TestRemediations of a node as the API server has
// them, whoever owns them.
func remediationsOf(t *testing.T, node string) []unstructured.Unstructured {
	t.Helper()
	list, err := dynamicClient.Resource(framework.RemediationResource).Namespace(framework.RemediatorNamespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var found []unstructured.Unstructured
	for _, r := range list.Items {
		if remediation.NodeOf(&r) == node {
			found = append(found, r)
		}
	}
	return found
}
