// Package cli is kubectl nhc: a kubectl plugin that shows what the
// nhc-controller does and why, with the controller's own engine
// (pkg/health). It only reads the cluster.
package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// Output formats besides the default table.
const (
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
)

// Options are what every subcommand shares: the kubeconfig flags, the
// output format, the streams and the clock.
type Options struct {
	genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	// output is "", wide, json or yaml.
	output string
	// now is the time the engine decides at.
	now func() time.Time
	// leaseNamespace is where the controller's node leases live.
	leaseNamespace string
	// connect connects to the cluster: Options.cluster, or fakes in tests.
	connect func() (*cluster, error)
}

// NewCommand returns kubectl nhc with its subcommands. now is the clock the
// engine decides at: time.Now, or a fixed time in tests.
func NewCommand(streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	o := &Options{IOStreams: streams, configFlags: genericclioptions.NewConfigFlags(true), now: now}
	o.connect = o.cluster
	return newCommand(o)
}

// addVerbosity adds -v, --v: the log level of client-go's request logs
// (-v=6 shows each request), as in every kubectl command. Without it,
// cobra would make -v mean --version.
func addVerbosity(root *cobra.Command) {
	logFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(logFlags)
	v := pflag.PFlagFromGoFlag(logFlags.Lookup("v"))
	v.Shorthand = "v"
	root.PersistentFlags().AddFlag(v)
}

// newCommand builds the commands on options whose connect is set.
func newCommand(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use: "nhc",
		// Usage and help say "kubectl nhc status", as kubectl plugins do.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl nhc"},
		Short:       "See what nhc-controller does with your nodes, and why",
		Long: "kubectl nhc shows NodeHealthChecks, their remediation history, why a node is or is not remediated, " +
			"and what a NodeHealthCheck would do before you apply it. It only reads the cluster, and decides " +
			"with the controller's own engine.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl completes plugins through kubectl_complete-nhc, which
		// calls "kubectl-nhc __complete"; a completion script of its own
		// would replace kubectl's.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	o.configFlags.AddFlags(root.PersistentFlags())
	addVerbosity(root)
	root.PersistentFlags().StringVarP(&o.output, "output", "o", "", "Output format: wide, json or yaml; a table by default")
	root.PersistentFlags().StringVar(&o.leaseNamespace, "lease-namespace", nodeleases.Namespace(), "Namespace of the node leases, as the controller's --lease-namespace")
	root.AddCommand(newStatusCommand(o), newHistoryCommand(o), newWhyCommand(o), newWhatIfCommand(o))
	return root
}

// cluster connects to the cluster the kubeconfig flags name.
func (o *Options) cluster() (*cluster, error) {
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	mapper, err := o.configFlags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("cannot discover the cluster's APIs: %w", err)
	}
	c := &cluster{mapper: mapper, listed: map[string][]unstructured.Unstructured{}, leaseNamespace: o.leaseNamespace}
	if c.nhcs, err = versioned.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.kube, err = kubernetes.NewForConfig(config); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(config); err != nil {
		return nil, err
	}
	return c, nil
}

// section ends a table, so that the next one gets its own column widths,
// and leaves a blank line.
func section(w io.Writer) {
	if f, ok := w.(interface{ Flush() error }); ok {
		_ = f.Flush()
	}
	fmt.Fprintln(w)
}

// start checks the output format before anything is read, and connects.
func (o *Options) start() (*cluster, error) {
	switch o.output {
	case "", outputWide, outputJSON, outputYAML:
		return o.connect()
	}
	return nil, fmt.Errorf("unknown output format %q: use wide, json or yaml", o.output)
}

// optionalName is the NAME argument, or "" for all.
func optionalName(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}

// print writes a report as JSON or YAML, or as the table that table
// writes, then the warnings of what could not be read.
func (o *Options) print(report any, c *cluster, table func(w io.Writer, wide bool)) error {
	switch o.output {
	case outputJSON:
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	case outputYAML:
		data, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	}
	// kubectl's spacing; unlike kubectl's writer, each table gets its own
	// column widths.
	w := tabwriter.NewWriter(o.Out, 6, 4, 3, ' ', 0)
	table(w, o.output == outputWide)
	if err := w.Flush(); err != nil {
		return err
	}
	for _, warning := range c.warnings {
		fmt.Fprintln(o.ErrOut, "Warning:", warning)
	}
	return nil
}
