package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
)

// HistoryReport is kubectl nhc history's output.
type HistoryReport struct {
	ReportMeta   `json:",inline"`
	Remediations []HistoryEntry `json:"remediations"`
	Summary      string         `json:"summary"`
}

func (r *HistoryReport) meta() *ReportMeta { return &r.ReportMeta }
func (r *HistoryReport) rows() string      { return "remediations" }

// names are the nodes remediated, each once, newest first.
func (r *HistoryReport) names() []named {
	var names []named
	for _, e := range r.Remediations {
		if n := nodeKind(e.TargetName); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// HistoryEntry is a record of status.remediationHistory with its
// NodeHealthCheck.
type HistoryEntry struct {
	NodeHealthCheck string `json:"nodeHealthCheck"`
	v1alpha1.RemediationRecord
}

func newHistoryCommand(o *Options) *cobra.Command {
	var node string
	cmd := &cobra.Command{
		Use:   "history [NAME]",
		Short: "Show the remediations of the NodeHealthChecks, newest first: when each node was detected, remediated, fenced and healthy again",
		Example: `  # Every remediation on record
  kubectl nhc history

  # One NodeHealthCheck's remediations of one node
  kubectl nhc history nhc-worker --node worker-3`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeNHCNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.history(cmd, optionalName(args), node)
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "Only the remediations of this node")
	_ = cmd.RegisterFlagCompletionFunc("node", o.completeNodeFlag)
	return cmd
}

func (o *Options) history(cmd *cobra.Command, name, node string) error {
	c, err := o.start()
	if err != nil {
		return err
	}
	nhcs, err := c.nodeHealthChecks(cmd.Context(), name)
	if err != nil {
		return err
	}
	report := HistoryReport{Remediations: []HistoryEntry{}}
	for _, nhc := range nhcs {
		for _, r := range nhc.Status.RemediationHistory {
			if node == "" || r.TargetName == node {
				report.Remediations = append(report.Remediations, HistoryEntry{NodeHealthCheck: nhc.Name, RemediationRecord: r})
			}
		}
	}
	slices.SortStableFunc(report.Remediations, func(a, b HistoryEntry) int { return b.Started.Compare(a.Started.Time) })
	report.Summary = historySummary(report.Remediations)
	now := o.now()
	return o.print(&report, "HistoryReport", c, func(w io.Writer, wide, headers bool) { printHistory(w, wide, headers, &report, now) })
}

func historySummary(entries []HistoryEntry) string {
	counts := map[v1alpha1.RemediationOutcome]int{}
	for _, e := range entries {
		counts[e.Outcome]++
	}
	var parts []string
	for _, outcome := range []v1alpha1.RemediationOutcome{v1alpha1.OutcomeRemediating, v1alpha1.OutcomeRecovered, v1alpha1.OutcomeTimedOut, v1alpha1.OutcomeNodeDeleted, v1alpha1.OutcomeCancelled} {
		if n := counts[outcome]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, outcome))
		}
	}
	if len(parts) == 0 {
		return "no remediations on record"
	}
	return plural(len(entries), "remediation") + ": " + strings.Join(parts, ", ")
}

func printHistory(w io.Writer, wide, headers bool, r *HistoryReport, now time.Time) {
	header := "NODEHEALTHCHECK\tNODE\tCONDITION\tDETECTED\tSTARTED\tFENCED\tFINISHED\tOUTCOME\tSTEPS"
	if wide {
		header += "\tTEMPLATES\tDURATION"
	}
	if headers {
		fmt.Fprintln(w, header)
	}
	for _, e := range r.Remediations {
		detected := e.Detected.Time
		var kinds, templates []string
		for _, s := range e.Steps {
			kinds = append(kinds, s.Kind)
			templates = append(templates, orNone(s.TemplateName))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", e.NodeHealthCheck, e.TargetName, condition(e.ConditionType, e.ConditionStatus), timestamp(detected),
			offset(detected, timeOf(&e.Started)), offset(detected, timeOf(e.Fenced)), offset(detected, timeOf(e.Finished)), e.Outcome, orNone(strings.Join(kinds, ",")))
		if wide {
			took := "ongoing for " + age(detected, now)
			if e.Finished != nil {
				took = age(detected, e.Finished.Time)
			}
			fmt.Fprintf(w, "\t%s\t%s", orNone(strings.Join(templates, ",")), took)
		}
		fmt.Fprintln(w)
	}
	if headers {
		section(w)
		fmt.Fprintln(w, r.Summary)
	}
}

// timeOf is a status time, or nil.
func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}
