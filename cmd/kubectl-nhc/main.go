// kubectl-nhc is a kubectl plugin: once on the PATH, kubectl nhc shows what
// nhc-controller does with the nodes and why. See docs/kubectl-nhc.md.
//
// It exits 0 with a whole report, 1 on an error (nothing printed), and 3
// when it printed a report without something it could not read (named in
// the warnings on standard error): a verdict a script must not trust.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodehealthcheck/nhc-controller/pkg/cli"
	"github.com/nodehealthcheck/nhc-controller/pkg/version"
)

// exitIncomplete is the exit status of a report printed incomplete.
const exitIncomplete = 3

func main() {
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, time.Now)
	cmd.Version = version.Get()
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if errors.Is(err, cli.ErrIncomplete) {
			os.Exit(exitIncomplete)
		}
		os.Exit(1)
	}
}
