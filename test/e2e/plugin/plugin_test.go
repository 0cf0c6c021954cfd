package plugin

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

// kubectlNHC runs "kubectl nhc" through the real kubectl, which finds the
// plugin on the PATH, as the user given by a kubeconfig.
func kubectlNHC(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.Cluster.BinDir, "kubectl"), append(append([]string{"nhc"}, args...), "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// nhc runs kubectl nhc as the admin and requires it to succeed.
func nhc(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := kubectlNHC(t, env.Cluster.Kubeconfig, args...)
	require.NoError(t, err, "kubectl nhc %v: %s", args, errOut)
	return out
}

// nhcJSON runs kubectl nhc -o json and decodes its report.
func nhcJSON(t *testing.T, report any, args ...string) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(nhc(t, append(args, "-o", "json")...)), report))
}

// row finds the table line whose first fields are the ones given.
func row(t *testing.T, out string, first ...string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= len(first) && slicesEqual(fields[:len(first)], first) {
			return fields
		}
	}
	require.Failf(t, "no such row", "no row starting with %v in:\n%s", first, out)
	return nil
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// lastLine is the summary line.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestStatusShowsTheBudgetAndTheNodesUnderRemediation(t *testing.T) {
	t.Parallel()
	const scenario = "status"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 4)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.MinHealthy = ptr.To(intstr.FromString("51%"))
		s.RemediationTemplate = nil
		s.EscalatingRemediations = []v1alpha1.EscalatingRemediation{{RemediationTemplate: framework.TemplateRef(scenario), Order: 1, Timeout: metav1.Duration{Duration: 10 * time.Minute}}}
	})
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "a remediation and the status to show it", func() bool {
		return len(env.Remediations(t, scenario)[nodes[0]]) == 1 && env.GetNHC(t, scenario).Status.Phase == v1alpha1.PhaseRemediating
	})

	out := nhc(t, "status", scenario)
	assert.Equal(t, []string{"NAME", "PHASE", "SELECTED", "HEALTHY", "ALLOWED", "IN-USE", "REMEDIATING", "STORM"}, strings.Fields(strings.Split(out, "\n")[0]))
	assert.Equal(t, []string{scenario, "Remediating", "4", "3", "1", "1", "1", "off"}, row(t, out, scenario, "Remediating"), "51%% of 4 is 3 healthy: 1 may be unhealthy")
	node := strings.Join(row(t, out, scenario, nodes[0]), " ")
	assert.Regexp(t, `^status status-00 Unhealthy 1/1 TestRemediation remediators/status-00 \d+s in (9m\d*s?|10m)$`, node)
	assert.Equal(t, "1 NodeHealthCheck: 1 remediating 1 node, 0 disabled, 0 in storm recovery", lastLine(out))
	assert.Contains(t, nhc(t, "status", scenario, "-o", "wide"), "NHC is remediating 1 nodes")

	var report cli.StatusReport
	nhcJSON(t, &report, "status", scenario)
	require.Len(t, report.NodeHealthChecks, 1)
	s := report.NodeHealthChecks[0]
	assert.Equal(t, [6]int{4, 3, 3, 1, 1, 1}, [6]int{s.Selected, s.Healthy, s.MinHealthy, s.Allowed, s.InUse, s.Remediating})
	require.Len(t, s.Nodes, 1)
	assert.Equal(t, 1, s.Nodes[0].Step)
	assert.Equal(t, 10*time.Minute, s.Nodes[0].TimesOut.Sub(*s.Nodes[0].Started))
}

func TestHistoryListsRemediations(t *testing.T) {
	t.Parallel()
	const scenario = "history"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, nil)
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "an ongoing record", func() bool { return len(env.GetNHC(t, scenario).Status.RemediationHistory) == 1 })
	assert.Equal(t, "Remediating", row(t, nhc(t, "history", scenario), scenario, nodes[0])[7])

	env.Recover(t, nodes[0])
	framework.Eventually(t, 15*time.Second, "the record to finish", func() bool {
		h := env.GetNHC(t, scenario).Status.RemediationHistory
		return len(h) == 1 && h[0].Finished != nil
	})
	out := nhc(t, "history", scenario)
	assert.Equal(t, []string{"NODEHEALTHCHECK", "NODE", "CONDITION", "DETECTED", "STARTED", "FENCED", "FINISHED", "OUTCOME", "STEPS"}, strings.Fields(strings.Split(out, "\n")[0]))
	fields := row(t, out, scenario, nodes[0], "Ready=False")
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, fields[3], "detected")
	assert.Regexp(t, `^\+\d+`, fields[4], "started, after detected")
	assert.Equal(t, "-", fields[5], "not fenced")
	assert.Regexp(t, `^\+\d+`, fields[6], "finished")
	assert.Equal(t, []string{"Recovered", "TestRemediation"}, fields[7:])
	assert.Equal(t, "1 remediation: 1 Recovered", lastLine(out))
	assert.Equal(t, "no remediations on record", lastLine(nhc(t, "history", scenario, "--node", nodes[1])))

	var report cli.HistoryReport
	nhcJSON(t, &report, "history", "--node", nodes[0])
	require.Len(t, report.Remediations, 1)
	assert.Equal(t, scenario, report.Remediations[0].NodeHealthCheck)
	assert.Equal(t, v1alpha1.OutcomeRecovered, report.Remediations[0].Outcome)
}

func TestWhyExplainsEachNode(t *testing.T) {
	t.Parallel()
	const scenario = "why"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 3)
	excluded := env.CreateNode(t, scenario, "why-excluded", framework.WithLabel(v1alpha1.ExcludeFromRemediationLabel, "true")).Name
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) {
		s.HealthyDelay = &metav1.Duration{Duration: -time.Second}
		for i := range s.UnhealthyConditions {
			s.UnhealthyConditions[i].Duration = metav1.Duration{Duration: 5 * time.Minute}
		}
	})
	env.Fail(t, time.Minute, nodes[1])
	env.Fail(t, time.Hour, nodes[2], excluded)
	framework.Eventually(t, 15*time.Second, "the remediation", func() bool { return len(env.Remediations(t, scenario)[nodes[2]]) == 1 })

	assert.Equal(t, "why-00 is selected by why: healthy: no unhealthy condition matches", lastLine(nhc(t, "why", nodes[0])))
	assert.Regexp(t, `^why-01 is selected by why: unhealthy since \S+Z; remediation due at \S+Z \(in (3m\d+s|4m\d*s?)\)$`, lastLine(nhc(t, "why", nodes[1])))
	assert.Regexp(t, `^why-02 is selected by why: under remediation: step 1 of 1, TestRemediation remediators/why-02, running for \d+s, runs until the node is healthy$`, lastLine(nhc(t, "why", nodes[2])))
	assert.Equal(t, "why-excluded is selected by why: waiting: the node has the label remediation.medik8s.io/exclude-from-remediation=true; "+
		"to allow it: kubectl label node why-excluded remediation.medik8s.io/exclude-from-remediation-", lastLine(nhc(t, "why", excluded)))
	table := nhc(t, "why", nodes[2])
	assert.Equal(t, []string{"why", "Unhealthy", "Ready=False", "60m"}, row(t, table, "why", "Unhealthy")[:4])

	env.Recover(t, nodes[2])
	framework.Eventually(t, 15*time.Second, "the verdict to ask for the confirmation", func() bool {
		return strings.HasSuffix(lastLine(nhc(t, "why", nodes[2])), "its remediation is kept until you confirm: kubectl annotate node why-02 remediation.medik8s.io/manually-confirmed-healthy=true")
	})

	var report cli.WhyReport
	nhcJSON(t, &report, "why", nodes[1])
	require.Len(t, report.Verdicts, 1)
	assert.Equal(t, "SoonUnhealthy", report.Verdicts[0].State)
	assert.Equal(t, 5*time.Minute, report.Verdicts[0].Due.Sub(*report.Verdicts[0].Since))
}

func TestWhyWarnsOfOverlapsAndSaysWhatHoldsANodeBack(t *testing.T) {
	t.Parallel()
	const scenario = "why-budget"
	env.CreateTemplate(t, scenario, nil)
	nodes := env.CreateNodes(t, scenario, 2)
	env.CreateNHC(t, scenario, func(s *v1alpha1.NodeHealthCheckSpec) { s.MinHealthy = ptr.To(intstr.FromInt32(2)) })
	env.Fail(t, time.Hour, nodes[0])
	framework.Eventually(t, 15*time.Second, "the controller to hold the node back", func() bool {
		return strings.Contains(env.GetNHC(t, scenario).Status.Reason, "wait")
	})
	assert.Equal(t, "why-budget-00 is selected by why-budget: waiting: only 1 of 2 nodes are healthy and 2 must be", lastLine(nhc(t, "why", nodes[0])))

	// A second NodeHealthCheck selects the healthy node too.
	env.CreateTemplate(t, "why-overlap", nil)
	env.CreateNHC(t, "why-overlap", func(s *v1alpha1.NodeHealthCheckSpec) {
		s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{framework.ScenarioLabel: scenario}}
		s.PauseRequests = []string{"keep the test's nodes alone"}
	})
	out := nhc(t, "why", nodes[1])
	assert.True(t, strings.HasPrefix(out, "WARNING: node why-budget-01 is selected by 2 NodeHealthChecks (why-budget, why-overlap): "+
		"only why-budget remediates it, the oldest (by creation time, then name); the others leave it alone. Make their selectors disjoint.\n"), out)
	row(t, out, "why-budget", "Healthy")
	row(t, out, "why-overlap", "Healthy")
	assert.Equal(t, "why-budget-01 is selected by why-budget, why-overlap; why-budget remediates it: healthy: no unhealthy condition matches", lastLine(out))

	// Resumed, the younger one leaves the unhealthy node to the older one,
	// which holds it back for its budget.
	env.UpdateNHC(t, "why-overlap", func(s *v1alpha1.NodeHealthCheckSpec) { s.PauseRequests = nil })
	out = nhc(t, "why", nodes[0])
	assert.Equal(t, "waiting: only 1 of 2 nodes are healthy and 2 must be", strings.Join(row(t, out, "why-budget")[4:], " "))
	assert.Regexp(t, `^waiting: NodeHealthCheck why-budget selects it too and remediates it(, being older|: both were created in the same second, and its name comes first); make the selectors disjoint$`,
		strings.Join(row(t, out, "why-overlap")[4:], " "))
	var report cli.WhyReport
	nhcJSON(t, &report, "why", nodes[0])
	assert.Equal(t, "why-budget", report.RemediatedBy)
	framework.Consistently(t, 2*time.Second, "no remediation", func() bool { return len(env.Remediations(t, "why-overlap")) == 0 })
}
