package cli

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run runs kubectl nhc with arguments and returns its output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out}, time.Now)
	cmd.SetArgs(args)
	require.NoError(t, cmd.Execute())
	return out.String()
}

// Help and usage name the plugin as kubectl runs it, and every subcommand
// shows how it is used.
func TestHelpSaysKubectlNhc(t *testing.T) {
	for _, sub := range []string{"status", "history", "why", "what-if"} {
		help := run(t, sub, "--help")
		assert.Contains(t, help, "Usage:\n  kubectl nhc "+sub, sub)
		assert.Contains(t, help, "Examples:\n  # ", sub)
		assert.NotContains(t, help, "kubectl "+sub, sub)
	}
	assert.Contains(t, run(t, "--help"), "kubectl nhc [command]")
}

// Completion is kubectl's: kubectl_complete-nhc asks kubectl-nhc
// __complete, and there is no completion command whose script would
// replace kubectl's own.
func TestCompletionIsKubectls(t *testing.T) {
	out := run(t, "__complete", "")
	for _, sub := range []string{"status", "history", "why", "what-if"} {
		assert.Contains(t, out, sub+"\t")
	}
	assert.NotContains(t, out, "completion")

	script, err := os.ReadFile("../../plugin/kubectl_complete-nhc")
	require.NoError(t, err)
	assert.Contains(t, string(script), `exec kubectl-nhc __complete "$@"`)
}

// -v is the log level, as in every kubectl command, not --version (issue
// 33: cobra made -v print the version).
func TestVerbosityIsDashV(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out}, time.Now)
	cmd.Version = "v9.9.9"
	cmd.SetArgs([]string{"-v=6", "--help"})
	require.NoError(t, cmd.Execute())
	assert.NotContains(t, out.String(), "v9.9.9")
	assert.Contains(t, out.String(), "-v, --v Level")
	assert.Equal(t, "6", cmd.PersistentFlags().Lookup("v").Value.String())

	out.Reset()
	cmd = NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out}, time.Now)
	cmd.Version = "v9.9.9"
	cmd.SetArgs([]string{"--version"})
	require.NoError(t, cmd.Execute())
	assert.Contains(t, out.String(), "v9.9.9", "--version still prints it")
}
