// Package cli is kubectl nhc: a kubectl plugin that shows what the
// nhc-controller does and why, with the controller's own engine
// (pkg/health). It only reads the cluster.
package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
)

// Options are what every subcommand shares: the kubeconfig flags, the
// output format, the streams and the clock.
type Options struct {
	genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	// output is "", wide, json, yaml, name, jsonpath=... or custom-columns=...
	output string
	// noHeaders leaves out the tables' headers and summary.
	noHeaders bool
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
	o := &Options{IOStreams: streams, configFlags: configFlags(), now: now}
	o.connect = o.cluster
	return newCommand(o)
}

// configFlags are kubectl's connection flags, without -n: every object
// kubectl nhc reads is cluster-scoped or read in every namespace.
func configFlags() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.Namespace = nil
	return f
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
	root.PersistentFlags().StringVarP(&o.output, "output", "o", "", "Output format: wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, jsonpath-file=FILE or custom-columns=SPEC (such as NAME:.name,HEALTHY:.healthy, over the report's rows); a table by default")
	root.PersistentFlags().BoolVar(&o.noHeaders, "no-headers", false, "Print the tables and custom columns without their headers and summary")
	_ = root.RegisterFlagCompletionFunc("output", completeOutput)
	root.PersistentFlags().StringVar(&o.leaseNamespace, "lease-namespace", nodeleases.Namespace(), "Namespace of the node leases, as the controller's --lease-namespace")
	root.AddCommand(newStatusCommand(o), newHistoryCommand(o), newWhyCommand(o), newWhatIfCommand(o))
	return root
}

// errNoCluster is what kubectl nhc says where kubectl would try
// localhost:8080 and be refused.
var errNoCluster = fmt.Errorf("no cluster configured: no kubeconfig names one (--kubeconfig, $KUBECONFIG, ~/.kube/config) and --server is not set; kubectl config view shows what kubectl sees")

// cluster connects to the cluster the kubeconfig flags name.
func (o *Options) cluster() (*cluster, error) {
	if err := o.checkConfigured(); err != nil {
		return nil, err
	}
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	mapper, err := o.configFlags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("cannot discover the cluster's APIs: %w", err)
	}
	c := &cluster{mapper: mapper, leaseNamespace: o.leaseNamespace}
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

// checkConfigured fails when nothing names a cluster: no kubeconfig with
// a cluster, no --server, and not in a pod.
func (o *Options) checkConfigured() error {
	if f := o.configFlags.APIServer; f != nil && *f != "" {
		return nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return nil
	}
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return fmt.Errorf("cannot load the kubeconfig: %w", err)
	}
	if len(raw.Clusters) == 0 {
		return errNoCluster
	}
	return nil
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
	if err := o.checkOutput(); err != nil {
		return nil, err
	}
	return o.connect()
}

// optionalName is the NAME argument, or "" for all.
func optionalName(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}
