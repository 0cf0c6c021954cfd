package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

func explain(in Input) map[string]Explanation {
	plan := Evaluate(in)
	byNode := map[string]Explanation{}
	for _, x := range plan.Explain() {
		byNode[x.Node] = x
	}
	return byNode
}

func TestExplainSaysWhatHappensNextAndWhy(t *testing.T) {
	first, second := template("FirstTemplate", "first"), template("SecondTemplate", "second")
	steps := escalating(escalationStep(first, 1, 10*time.Minute), escalationStep(second, 2, 10*time.Minute))
	list := append(nodes("healthy", 2), testNode("sick", unhealthy), testNode("due", unhealthy), testNode("soon", notReady(time.Minute)),
		testNode("back"), testNode("excluded", unhealthy, label(v1alpha1.ExcludeFromRemediationLabel, "true")))
	resources := map[string][]Remediation{
		"sick": {remediationOf(first, "sick", 12*time.Minute, timedOutAnnotation(now.Add(-2*time.Minute))), remediationOf(second, "sick", 2*time.Minute)},
		"back": {remediationOf(first, "back", time.Hour)},
	}
	x := explain(Input{NHC: testNHC(steps, minHealthy(intstr.FromInt32(1)), healthyDelay(5*time.Minute)), Nodes: list, Remediations: resources, Now: now})

	assert.NotContains(t, x, "healthy-0", "healthy nodes need no explanation")
	sick := x["sick"]
	assert.Equal(t, StateUnhealthy, sick.State)
	assert.Equal(t, 2, sick.Step)
	assert.Equal(t, 2, sick.Steps)
	assert.Equal(t, "Second", sick.Resource.Kind)
	assert.Equal(t, now.Add(8*time.Minute), sick.StepTimesOut)

	assert.True(t, x["due"].CreatesNow)
	assert.Equal(t, now.Add(-time.Hour+conditionDuration), x["due"].Due)

	assert.Equal(t, StateSoonUnhealthy, x["soon"].State)
	assert.Equal(t, now.Add(-time.Minute+conditionDuration), x["soon"].Due)

	assert.Equal(t, StateRecovering, x["back"].State)
	assert.Equal(t, now.Add(5*time.Minute), x["back"].HealthyDelayEnds, "the delay starts now")

	assert.Equal(t, WaitExcluded, x["excluded"].Waiting)
	assert.Equal(t, "the node has the label remediation.medik8s.io/exclude-from-remediation=true", x["excluded"].Because)

	held := explain(Input{NHC: testNHC(minHealthy(intstr.FromInt32(5))), Nodes: append(nodes("healthy", 4), testNode("sick", unhealthy)), Now: now})
	assert.Equal(t, "only 4 of 5 nodes are healthy and 5 must be", held["sick"].Because)

	confirm := explain(Input{NHC: testNHC(healthyDelay(-time.Second)), Nodes: []*nodeview.Node{testNode("back")}, Remediations: remediations(snrRemediation("back", time.Hour)), Now: now})
	assert.True(t, confirm["back"].NeedsConfirmation)
}

func TestForecastFirstRemediations(t *testing.T) {
	// Two nodes fall due in one and two minutes; a third is unhealthy now.
	list := append(nodes("healthy", 5), testNode("now", unhealthy), testNode("in-1m", notReady(4*time.Minute)), testNode("in-2m", notReady(3*time.Minute)))
	f := ForecastFirstRemediations(Input{NHC: testNHC(minHealthy(intstr.FromInt32(5))), Nodes: list, Now: now}, now.Add(time.Hour))
	assert.Equal(t, now, f["now"].At)
	assert.Equal(t, now.Add(time.Minute), f["in-1m"].At)
	assert.Equal(t, now.Add(2*time.Minute), f["in-2m"].At)
	assert.Empty(t, f["in-2m"].Waiting)

	// With six healthy nodes needed, all three wait for minHealthy.
	held := ForecastFirstRemediations(Input{NHC: testNHC(minHealthy(intstr.FromInt32(6))), Nodes: list, Now: now}, now.Add(time.Hour))
	require.Len(t, held, 3)
	for node, forecast := range held {
		assert.True(t, forecast.At.IsZero(), node)
		assert.Equal(t, WaitMinHealthy, forecast.Waiting, node)
	}

	// The end of the forecast: the two-minute node is not due before it.
	short := ForecastFirstRemediations(Input{NHC: testNHC(minHealthy(intstr.FromInt32(5))), Nodes: list, Now: now}, now.Add(90*time.Second))
	assert.NotContains(t, short, "in-2m")
}
