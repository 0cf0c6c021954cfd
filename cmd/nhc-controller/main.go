// Command nhc-controller runs the NodeHealthCheck controller.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"

	"github.com/nodehealthcheck/nhc-controller/pkg/memlimit"
	"github.com/nodehealthcheck/nhc-controller/pkg/version"
)

func main() {
	opts := defaultOptions()
	logging := logsapi.NewLoggingConfiguration()
	fs, showVersion := flagSet(opts, logging)
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if *showVersion {
		fmt.Println("nhc-controller", version.Get())
		return
	}
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer logs.FlushLogs()
	if err := opts.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := klog.FromContext(ctx)
	logger.Info("Starting nhc-controller", "version", version.Get(), "workers", opts.workers, "leaderElection", opts.election.LeaderElect)
	memlimit.Set(logger)
	if err := run(ctx, opts); err != nil {
		logger.Error(err, "nhc-controller failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	logger.Info("nhc-controller stopped")
}

// flagSet registers every flag of the binary: the options', logging's and
// --version. docs/operating.md documents each (TestEveryFlagIsDocumented).
func flagSet(opts *options, logging *logsapi.LoggingConfiguration) (fs *pflag.FlagSet, showVersion *bool) {
	fs = pflag.NewFlagSet("nhc-controller", pflag.ExitOnError)
	opts.addFlags(fs)
	logsapi.AddFlags(logging, fs)
	return fs, fs.Bool("version", false, "Print the version and exit.")
}
