// kubectl-nhc is a kubectl plugin: once on the PATH, kubectl nhc shows what
// nhc-controller does with the nodes and why. See docs/kubectl-nhc.md.
package main

import (
	"fmt"
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/pkg/version"
)

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, time.Now)
	cmd.Version = version.Get()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
