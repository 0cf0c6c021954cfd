// kubectl-nhc is a kubectl plugin: once on the PATH, kubectl nhc shows what
// nhc-controller does with the nodes and why. See docs/kubectl-nhc.md.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, time.Now)
	cmd.Version = buildVersion()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// buildVersion is the version stamped at build time, or the module's.
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
