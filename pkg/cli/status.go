package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// StatusReport is kubectl nhc status's output.
type StatusReport struct {
	ReportMeta       `json:",inline"`
	NodeHealthChecks []NHCStatus `json:"nodeHealthChecks"`
	Summary          string      `json:"summary"`
}

func (r *StatusReport) meta() *ReportMeta { return &r.ReportMeta }
func (r *StatusReport) rows() string      { return "nodeHealthChecks" }
func (r *StatusReport) names() []named {
	var names []named
	for _, s := range r.NodeHealthChecks {
		names = append(names, nodeHealthCheckKind(s.Name))
	}
	return names
}

// NHCStatus is one NodeHealthCheck's state, as the engine sees it now.
type NHCStatus struct {
	Name string `json:"name"`
	// Phase and Reason are the controller's, from the status.
	Phase  string `json:"phase"`
	Reason string `json:"reason"`
	// Selected and Healthy count the selected nodes and the healthy ones.
	Selected int `json:"selected"`
	Healthy  int `json:"healthy"`
	// MinHealthy is how many must be healthy for new remediations to start.
	MinHealthy int `json:"minHealthy"`
	// Allowed is how many nodes may be unhealthy at once with new
	// remediations still starting: selected - minHealthy.
	Allowed int `json:"allowed"`
	// InUse is how many are not healthy now: unhealthy, soon unhealthy, or
	// still under remediation. New remediations start while InUse <= Allowed.
	InUse       int  `json:"inUse"`
	Remediating int  `json:"remediating"`
	StormActive bool `json:"stormActive"`
	// StormSince is when storm recovery started, while it is active.
	StormSince *time.Time `json:"stormSince,omitempty"`
	// Nodes are the nodes under remediation.
	Nodes []RemediatingNode `json:"nodes,omitempty"`
}

// RemediatingNode is a node under remediation.
type RemediatingNode struct {
	Node  string `json:"node"`
	State string `json:"state"`
	// Step is the running step, from 1, of Steps; 0 when none runs.
	Step     int    `json:"step"`
	Steps    int    `json:"steps"`
	Resource string `json:"resource,omitempty"`
	// Started is when the running step started; TimesOut when it times out.
	Started  *time.Time `json:"started,omitempty"`
	TimesOut *time.Time `json:"timesOut,omitempty"`
	Verdict  string     `json:"verdict"`
}

func newStatusCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show each NodeHealthCheck's phase, budget, storm state and the nodes under remediation",
		Example: `  # Every NodeHealthCheck
  kubectl nhc status

  # One, with the columns of -o wide, or as JSON
  kubectl nhc status nhc-worker -o wide
  kubectl nhc status nhc-worker -o json

  # The NodeHealthChecks that remediate now, for a script
  kubectl nhc status -o custom-columns=NAME:.name,REMEDIATING:.remediating --no-headers`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeNHCNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.status(cmd, optionalName(args))
		},
	}
}

func (o *Options) status(cmd *cobra.Command, name string) error {
	c, err := o.start()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	nhcs, err := c.nodeHealthChecks(ctx, name)
	if err != nil {
		return err
	}
	nodes, err := c.nodes(ctx)
	if err != nil {
		return err
	}
	now := o.now()
	report := StatusReport{NodeHealthChecks: []NHCStatus{}}
	for i := range nhcs {
		in, err := c.input(ctx, &nhcs[i], nodes, now)
		if err != nil {
			return err
		}
		e := evaluate(in)
		report.NodeHealthChecks = append(report.NodeHealthChecks, statusOf(e, now))
	}
	report.Summary = statusSummary(report.NodeHealthChecks)
	return o.print(&report, "StatusReport", c, func(w io.Writer, wide, headers bool) { printStatus(w, wide, headers, &report, now) })
}

func statusOf(e *evaluation, now time.Time) NHCStatus {
	p := &e.plan
	s := NHCStatus{
		Name: e.in.NHC.Name, Phase: string(e.in.NHC.Status.Phase), Reason: e.in.NHC.Status.Reason,
		Selected: p.Observed, Healthy: p.Healthy, MinHealthy: p.Budget.MinHealthy, Allowed: max(p.Observed-p.Budget.MinHealthy, 0),
		InUse: p.Observed - p.Healthy, Remediating: p.Remediating, StormActive: p.Storm.Active,
	}
	if p.Storm.Active {
		s.StormSince = &p.Storm.Since
	}
	for _, v := range p.Nodes {
		x := e.explained[v.Node.Name]
		if x == nil || v.Remediations == 0 {
			continue
		}
		n := RemediatingNode{Node: x.Node, State: string(x.State), Step: x.Step, Steps: x.Steps, Verdict: verdict(x, now)}
		if x.Resource != nil {
			n.Resource = fmt.Sprintf("%s %s/%s", x.Resource.Kind, x.Resource.Namespace, x.Resource.Name)
			n.Started = &x.StepStarted
		}
		if !x.StepTimesOut.IsZero() {
			n.TimesOut = &x.StepTimesOut
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

func statusSummary(nhcs []NHCStatus) string {
	remediating, nodes, disabled, storms := 0, 0, 0, 0
	for _, s := range nhcs {
		if s.Remediating > 0 {
			remediating++
			nodes += s.Remediating
		}
		if s.Phase == "Disabled" {
			disabled++
		}
		if s.StormActive {
			storms++
		}
	}
	return fmt.Sprintf("%s: %d remediating %s, %d disabled, %d in storm recovery",
		plural(len(nhcs), "NodeHealthCheck"), remediating, plural(nodes, "node"), disabled, storms)
}

func printStatus(w io.Writer, wide, headers bool, r *StatusReport, now time.Time) {
	header := "NAME\tPHASE\tSELECTED\tHEALTHY\tALLOWED\tIN-USE\tREMEDIATING\tSTORM"
	if wide {
		header += "\tMIN-HEALTHY\tREASON"
	}
	if headers {
		fmt.Fprintln(w, header)
	}
	for _, s := range r.NodeHealthChecks {
		storm := "off"
		if s.StormActive {
			storm = "active for " + age(*s.StormSince, now)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s", s.Name, orNone(s.Phase), s.Selected, s.Healthy, s.Allowed, s.InUse, s.Remediating, storm)
		if wide {
			fmt.Fprintf(w, "\t%d\t%s", s.MinHealthy, orNone(s.Reason))
		}
		fmt.Fprintln(w)
	}
	var rows []string
	for _, s := range r.NodeHealthChecks {
		for _, n := range s.Nodes {
			step, started, timesOut := none, none, none
			if n.Step > 0 {
				step = fmt.Sprintf("%d/%d %s", n.Step, n.Steps, n.Resource)
			}
			if n.Started != nil {
				started = age(*n.Started, now)
			}
			if n.TimesOut != nil {
				timesOut = relative(*n.TimesOut, now)
			}
			row := strings.Join([]string{s.Name, n.Node, n.State, step, started, timesOut}, "\t")
			if wide {
				row += "\t" + n.Verdict
			}
			rows = append(rows, row)
		}
	}
	if len(rows) > 0 {
		section(w)
		header := "NODEHEALTHCHECK\tNODE\tSTATE\tSTEP\tAGE\tTIMEOUT"
		if wide {
			header += "\tVERDICT"
		}
		if headers {
			fmt.Fprintln(w, header)
		}
		for _, row := range rows {
			fmt.Fprintln(w, row)
		}
	}
	if headers {
		section(w)
		fmt.Fprintln(w, r.Summary)
	}
}
