package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
	"github.com/nodehealthcheck/nhc-controller/pkg/nodeview"
)

// The words of kubectl nhc why.
const (
	whyOverlap = "WARNING: node %s is selected by %d NodeHealthChecks (%s): only %s remediates it, %s; the others leave it alone. Make their selectors disjoint."
	whyOldest  = "the oldest (by creation time, then name)"
	whyAlready = "which has remediation resources for it"
	// whyCanAct (older one, why it cannot act): the rule's second place.
	whyCanAct         = "which can act, where the older %s cannot (%s)"
	whyHasResources   = "it has remediation resources for it"
	whyNotSelected    = "%s is not selected by any NodeHealthCheck: nothing will remediate it"
	whySelected       = "%s is selected by %s: %s"
	whySelectedByMany = "%s is selected by %s; %s remediates it: %s"
	whyNoSuchNode     = "node %q not found: kubectl get nodes lists them"
)

// WhyReport is kubectl nhc why's output.
type WhyReport struct {
	ReportMeta `json:",inline"`
	Node       string `json:"node"`
	// SelectedBy are the NodeHealthChecks that select the node.
	SelectedBy []string `json:"selectedBy"`
	// Warning is set when more than one NodeHealthCheck selects it.
	Warning string `json:"warning,omitempty"`
	// RemediatedBy is the one NodeHealthCheck that remediates it when more
	// than one selects it.
	RemediatedBy string       `json:"remediatedBy,omitempty"`
	Verdicts     []WhyVerdict `json:"verdicts"`
	Summary      string       `json:"summary"`
}

func (r *WhyReport) meta() *ReportMeta { return &r.ReportMeta }
func (r *WhyReport) rows() string      { return "verdicts" }

// names are the NodeHealthChecks that select the node.
func (r *WhyReport) names() []named {
	var names []named
	for _, name := range r.SelectedBy {
		names = append(names, nodeHealthCheckKind(name))
	}
	return names
}

// WhyVerdict is what one NodeHealthCheck's engine says about the node now.
type WhyVerdict struct {
	NodeHealthCheck string `json:"nodeHealthCheck"`
	State           string `json:"state"`
	Condition       string `json:"condition,omitempty"`
	// Since is when the matching node condition changed; Due is when its
	// duration passes.
	Since *time.Time `json:"since,omitempty"`
	Due   *time.Time `json:"due,omitempty"`
	// Waiting is why the node waits for a remediation it needs.
	Waiting string `json:"waiting,omitempty"`
	// Step is the running remediation step, from 1, of Steps.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
	// Verdict says it in a sentence.
	Verdict string `json:"verdict"`
}

func newWhyCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "why NODE",
		Short: "Say which NodeHealthChecks select a node and what each does with it now, and why",
		Example: `  # Why is worker-3 (not) remediated?
  kubectl nhc why worker-3

  # The same as YAML, for a bug report
  kubectl nhc why worker-3 -o yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNodeNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.why(cmd, args[0])
		},
	}
}

func (o *Options) why(cmd *cobra.Command, nodeName string) error {
	c, err := o.start()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if _, err := c.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf(whyNoSuchNode, nodeName)
		}
		return readError(err, "get", "nodes")
	}
	nhcs, err := c.nodeHealthChecks(ctx, "")
	if err != nil {
		return err
	}
	nodes, err := c.nodes(ctx)
	if err != nil {
		return err
	}
	now := o.now()
	report := WhyReport{Node: nodeName, SelectedBy: []string{}, Verdicts: []WhyVerdict{}}
	var first *health.Input
	for i := range nhcs {
		nhc := &nhcs[i]
		if !selectsNode(nhc, nodes, nodeName) {
			continue
		}
		report.SelectedBy = append(report.SelectedBy, nhc.Name)
		in, err := c.input(ctx, nhc, nodes, now)
		if err != nil {
			return err
		}
		e := evaluate(in)
		report.Verdicts = append(report.Verdicts, whyVerdict(nhc.Name, e.explained[nodeName], now))
		if first == nil {
			first = &e.in
		}
	}
	switch len(report.SelectedBy) {
	case 0:
		report.Summary = fmt.Sprintf(whyNotSelected, nodeName)
	case 1:
		report.Summary = fmt.Sprintf(whySelected, nodeName, report.SelectedBy[0], report.Verdicts[0].Verdict)
	default:
		whyShared(&report, first)
	}
	return o.print(&report, "WhyReport", c, func(w io.Writer, wide, headers bool) { printWhy(w, wide, headers, &report, now) })
}

// whyShared says which of the NodeHealthChecks that select the node
// remediates it, by the controller's rule: every one of them gets the same
// answer, so the first one's input says it.
func whyShared(r *WhyReport, in *health.Input) {
	by, _ := in.RemediatorOf(r.Node)
	because, verdict := whyOldest, whyHasResources
	if by.Remediating {
		because = whyAlready
	} else if idle, why := olderThatCannotAct(in, r.Node, by); idle != "" {
		because = fmt.Sprintf(whyCanAct, idle, why)
	}
	for _, v := range r.Verdicts {
		if v.NodeHealthCheck == by.Name {
			verdict = v.Verdict
		}
	}
	selectedBy := strings.Join(r.SelectedBy, ", ")
	r.RemediatedBy = by.Name
	r.Warning = fmt.Sprintf(whyOverlap, r.Node, len(r.SelectedBy), selectedBy, by.Name, because)
	r.Summary = fmt.Sprintf(whySelectedByMany, r.Node, selectedBy, by.Name, verdict)
}

// olderThatCannotAct names a NodeHealthCheck that selects the node, is
// older than the one that remediates it and cannot act, and says why: the
// remediator won by being able to act.
func olderThatCannotAct(in *health.Input, node string, by health.Claim) (string, string) {
	if why := health.CannotAct(in.NHC); why != "" && in.NHC.CreationTimestamp.Time.Before(by.Created) {
		return in.NHC.Name, why
	}
	for _, c := range in.Claims[node] {
		if c.Selects && c.CannotAct != "" && c.Created.Before(by.Created) {
			return c.Name, c.CannotAct
		}
	}
	return "", ""
}

func selectsNode(nhc *v1alpha1.NodeHealthCheck, nodes []*nodeview.Node, name string) bool {
	for _, node := range selects(nhc, nodes) {
		if node.Name == name {
			return true
		}
	}
	return false
}

func whyVerdict(nhc string, x *health.Explanation, now time.Time) WhyVerdict {
	v := WhyVerdict{NodeHealthCheck: nhc, State: string(health.StateHealthy), Verdict: verdict(x, now)}
	if x == nil {
		return v
	}
	v.State, v.Waiting, v.Step, v.Steps = string(x.State), x.Because, x.Step, x.Steps
	if x.Condition != nil {
		v.Condition, v.Since, v.Due = conditionOf(x.Condition), &x.Since, &x.Due
	}
	if x.Step == 0 {
		v.Steps = 0
	}
	return v
}

func printWhy(w io.Writer, wide, headers bool, r *WhyReport, now time.Time) {
	if r.Warning != "" && headers {
		fmt.Fprintln(w, r.Warning)
		section(w)
	}
	if len(r.Verdicts) > 0 {
		header := "NODEHEALTHCHECK\tSTATE\tCONDITION\tSINCE\tVERDICT"
		if wide {
			header += "\tDUE"
		}
		if headers {
			fmt.Fprintln(w, header)
		}
		for _, v := range r.Verdicts {
			since, due := none, none
			if v.Since != nil {
				since, due = age(*v.Since, now), timestamp(*v.Due)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s", v.NodeHealthCheck, v.State, orNone(v.Condition), since, v.Verdict)
			if wide {
				fmt.Fprintf(w, "\t%s", due)
			}
			fmt.Fprintln(w)
		}
		if headers {
			section(w)
		}
	}
	if headers {
		fmt.Fprintln(w, r.Summary)
	}
}
