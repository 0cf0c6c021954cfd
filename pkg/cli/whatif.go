package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/pkg/apis/remediation/v1alpha1"
	"github.com/nodehealthcheck/nhc-controller/pkg/health"
)

// The words of kubectl nhc what-if.
const (
	whatIfNow       = "now"
	whatIfAt        = "at %s (%s)"
	whatIfHeld      = "held: %s"
	whatIfBeyond    = "not before %s (due at %s)"
	whatIfRunning   = "already under remediation"
	whatIfRecovered = "recovering: its remediation ends"
	whatIfSummary   = "%s would select %s: it would remediate %d now and %d later (within %s), and hold back %d"
	whatIfDisabled  = "; it would be disabled: %s: %s"
	whatIfNotNHC    = "%s holds a %s, not a NodeHealthCheck (remediation.medik8s.io/v1alpha1)"
	whatIfBadFile   = "cannot read a NodeHealthCheck from %s: %w"
	whatIfOverlap   = "WARNING: %s also selected by %s: %s; %s remediates %d of them (only one NodeHealthCheck remediates a node: the one already remediating it, else one that can act (not disabled, paused or deleting), the oldest whose unhealthy conditions hold on it)"
)

// WhatIfReport is kubectl nhc what-if's output.
type WhatIfReport struct {
	ReportMeta      `json:",inline"`
	NodeHealthCheck string `json:"nodeHealthCheck"`
	// Applied is true when a NodeHealthCheck of this name exists: the
	// evaluation is of the change, with its current remediations.
	Applied bool `json:"applied"`
	// Problem is why it would be disabled.
	Problem      string `json:"problem,omitempty"`
	Selected     int    `json:"selected"`
	ControlPlane int    `json:"controlPlane"`
	Healthy      int    `json:"healthy"`
	MinHealthy   int    `json:"minHealthy"`
	// RemediationAllowed is true when minHealthy/maxUnhealthy allows new
	// remediations now.
	RemediationAllowed bool `json:"remediationAllowed"`
	StormActive        bool `json:"stormActive"`
	// Overlaps are the other NodeHealthChecks that select some of the same nodes.
	Overlaps []Overlap    `json:"overlaps,omitempty"`
	Nodes    []WhatIfNode `json:"nodes"`
	Summary  string       `json:"summary"`
}

func (r *WhatIfReport) meta() *ReportMeta { return &r.ReportMeta }
func (r *WhatIfReport) rows() string      { return "nodes" }

// names are the nodes that are not healthy.
func (r *WhatIfReport) names() []named {
	var names []named
	for _, n := range r.Nodes {
		names = append(names, nodeKind(n.Node))
	}
	return names
}

// Overlap is another NodeHealthCheck that selects some of the same nodes.
type Overlap struct {
	NodeHealthCheck string   `json:"nodeHealthCheck"`
	Nodes           []string `json:"nodes"`
	// Remediates is how many of them it remediates, by the controller's
	// rule: the one already remediating a node, else one that can act, the
	// oldest whose unhealthy conditions hold on it.
	Remediates int `json:"remediates"`
}

// WhatIfNode is what would happen to a node that is not healthy.
type WhatIfNode struct {
	Node      string     `json:"node"`
	State     string     `json:"state"`
	Condition string     `json:"condition,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// Due is when the condition's duration passes.
	Due *time.Time `json:"due,omitempty"`
	// RemediatedAt is when its first remediation would be created.
	RemediatedAt *time.Time `json:"remediatedAt,omitempty"`
	// Held is why it would wait.
	Held        string `json:"held,omitempty"`
	Remediation string `json:"remediation"`
}

func newWhatIfCommand(o *Options) *cobra.Command {
	var file string
	horizon := 24 * time.Hour
	cmd := &cobra.Command{
		Use:   "what-if -f FILE",
		Short: "Evaluate a NodeHealthCheck that is not applied yet against the live nodes, writing nothing",
		Long: "what-if evaluates a NodeHealthCheck from a file with the controller's engine against the live nodes: " +
			"which nodes it selects, which other NodeHealthChecks select them too, which it would remediate now, " +
			"which later and when, and which minHealthy/maxUnhealthy or storm recovery would hold back. " +
			"For a NodeHealthCheck that exists, it evaluates the change with its current remediations. It writes nothing.",
		Example: `  # What would this NodeHealthCheck do if applied now?
  kubectl nhc what-if -f nhc-worker.yaml

  # A change of one that exists, with its current remediations
  kubectl get nhc nhc-worker -o yaml > nhc.yaml && vi nhc.yaml && kubectl nhc what-if -f nhc.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.whatIf(cmd, file, horizon) },
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "The NodeHealthCheck's YAML or JSON; - reads standard input")
	cmd.Flags().DurationVar(&horizon, "horizon", horizon, "How far ahead to forecast remediations of nodes that are not due yet")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readNHC reads a NodeHealthCheck from a file, strictly: a misspelt field
// is an error, not a silently different NodeHealthCheck.
func (o *Options) readNHC(file string) (*v1alpha1.NodeHealthCheck, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(o.In)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf(whatIfBadFile, file, err)
	}
	nhc := &v1alpha1.NodeHealthCheck{}
	if err := yaml.UnmarshalStrict(data, nhc); err != nil {
		return nil, fmt.Errorf(whatIfBadFile, file, err)
	}
	if nhc.Kind != "NodeHealthCheck" || !strings.HasPrefix(nhc.APIVersion, "remediation.medik8s.io/") {
		return nil, fmt.Errorf(whatIfNotNHC, file, orNone(nhc.APIVersion+" "+nhc.Kind))
	}
	if nhc.Name == "" {
		nhc.Name = "what-if"
	}
	return nhc, nil
}

func (o *Options) whatIf(cmd *cobra.Command, file string, horizon time.Duration) error {
	nhc, err := o.readNHC(file)
	if err != nil {
		return err
	}
	c, err := o.start()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	others, err := c.nodeHealthChecks(ctx, "")
	if err != nil {
		return err
	}
	nodes, err := c.nodes(ctx)
	if err != nil {
		return err
	}
	report := WhatIfReport{NodeHealthCheck: nhc.Name, Nodes: []WhatIfNode{}}
	now := o.now()
	// The status and resources of an applied one count; a new one has none,
	// and would be the youngest.
	nhc.UID, nhc.Status, nhc.CreationTimestamp = "", v1alpha1.NodeHealthCheckStatus{}, metav1.NewTime(now)
	for i := range others {
		if others[i].Name == nhc.Name {
			report.Applied, nhc.UID, nhc.Status, nhc.CreationTimestamp = true, others[i].UID, *others[i].Status.DeepCopy(), others[i].CreationTimestamp
		}
	}
	in, err := c.input(ctx, nhc, nodes, now)
	if err != nil {
		return err
	}
	e := evaluate(in)
	forecasts := health.ForecastFirstRemediations(in, now.Add(horizon))
	fillWhatIf(&report, e, forecasts, now, horizon)
	report.Overlaps = overlaps(&in)
	return o.print(&report, "WhatIfReport", c, func(w io.Writer, wide, headers bool) { printWhatIf(w, wide, headers, &report, now) })
}

func fillWhatIf(r *WhatIfReport, e *evaluation, forecasts map[string]health.Forecast, now time.Time, horizon time.Duration) {
	p := &e.plan
	r.Selected, r.Healthy, r.MinHealthy, r.RemediationAllowed, r.StormActive = p.Observed, p.Healthy, p.Budget.MinHealthy, p.Budget.Allowed, p.Storm.Active
	later, held, nowCount := 0, 0, 0
	for _, v := range p.Nodes {
		// The plan marks only the nodes that are not healthy.
		if v1alpha1.IsControlPlane(v.Node.Labels) {
			r.ControlPlane++
		}
		x := e.explained[v.Node.Name]
		if x == nil {
			continue
		}
		n := WhatIfNode{Node: x.Node, State: string(x.State), Condition: conditionOf(x.Condition)}
		if x.Condition != nil {
			n.Since, n.Due = &x.Since, &x.Due
		}
		f, forecast := forecasts[x.Node]
		switch {
		case x.State == health.StateRecovering:
			n.Remediation = whatIfRecovered
		case v.Remediations > 0:
			n.Remediation = whatIfRunning
		case forecast && !f.At.IsZero():
			n.RemediatedAt = &f.At
			if f.At.Equal(now) {
				n.Remediation = whatIfNow
				nowCount++
			} else {
				n.Remediation = fmt.Sprintf(whatIfAt, timestamp(f.At), relative(f.At, now))
				later++
			}
		case forecast:
			n.Held, n.Remediation = f.Because, fmt.Sprintf(whatIfHeld, f.Because)
			held++
		default:
			n.Remediation = fmt.Sprintf(whatIfBeyond, timestamp(now.Add(horizon)), timestamp(x.Due))
		}
		r.Nodes = append(r.Nodes, n)
	}
	r.Summary = fmt.Sprintf(whatIfSummary, r.NodeHealthCheck, plural(r.Selected, "node"), nowCount, later, duration.HumanDuration(horizon), held)
	if p.Problem != nil {
		r.Problem = p.Problem.Reason + ": " + p.Problem.Message
		r.Summary += fmt.Sprintf(whatIfDisabled, p.Problem.Reason, p.Problem.Message)
	}
}

// overlaps finds the other NodeHealthChecks that select some of the nodes
// this one selects, and how many of those each remediates, by name.
func overlaps(in *health.Input) []Overlap {
	byName := map[string]*Overlap{}
	for _, node := range in.Nodes {
		by, self := in.RemediatorOf(node.Name)
		for _, claim := range in.Claims[node.Name] {
			if !claim.Selects {
				continue
			}
			o := byName[claim.Name]
			if o == nil {
				o = &Overlap{NodeHealthCheck: claim.Name}
				byName[claim.Name] = o
			}
			o.Nodes = append(o.Nodes, node.Name)
			if !self && by.UID == claim.UID {
				o.Remediates++
			}
		}
	}
	var found []Overlap
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		slices.Sort(byName[name].Nodes)
		found = append(found, *byName[name])
	}
	return found
}

func printWhatIf(w io.Writer, wide, headers bool, r *WhatIfReport, now time.Time) {
	if !headers {
		printWhatIfNodes(w, wide, false, r, now)
		return
	}
	for _, o := range r.Overlaps {
		fmt.Fprintf(w, whatIfOverlap+"\n", plural(len(o.Nodes), "node"), o.NodeHealthCheck, strings.Join(o.Nodes, ", "), o.NodeHealthCheck, o.Remediates)
	}
	budget := "new remediations allowed"
	if !r.RemediationAllowed {
		budget = "new remediations held back"
	}
	fmt.Fprintf(w, "Budget: %d of %d selected nodes healthy, %d must be: %s\n", r.Healthy, r.Selected, r.MinHealthy, budget)
	if r.StormActive {
		fmt.Fprintln(w, "Storm recovery: active")
	}
	if len(r.Nodes) > 0 {
		section(w)
		printWhatIfNodes(w, wide, true, r, now)
	}
	section(w)
	fmt.Fprintln(w, r.Summary)
}

// printWhatIfNodes prints the table of the nodes that are not healthy.
func printWhatIfNodes(w io.Writer, wide, headers bool, r *WhatIfReport, now time.Time) {
	header := "NODE\tSTATE\tCONDITION\tSINCE\tREMEDIATION"
	if wide {
		header += "\tDUE"
	}
	if headers {
		fmt.Fprintln(w, header)
	}
	for _, n := range r.Nodes {
		since, due := none, none
		if n.Since != nil {
			since, due = age(*n.Since, now), timestamp(*n.Due)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s", n.Node, n.State, n.Condition, since, n.Remediation)
		if wide {
			fmt.Fprintf(w, "\t%s", due)
		}
		fmt.Fprintln(w)
	}
}
